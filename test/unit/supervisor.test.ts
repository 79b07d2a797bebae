import { StopRequested, Supervisor } from '../../src/main/supervisor';

/** What `npm start` started, as parts that record when they are asked to stop. */
function recorder() {
  const events: string[] = [];
  const logger = { info: (message: string) => events.push(message), warn: (message: string) => events.push(`warn: ${message}`), error: () => events.push('error') };
  const part = (name: string, stop: () => Promise<void> = async () => undefined) => async () => ({
    stop: async () => {
      events.push(`${name} asked`);
      await stop();
      events.push(`${name} stopped`);
    },
  });
  return { events, logger, part };
}

describe('the supervisor of npm start', () => {
  it('when asked to stop, then it stops the parts in reverse order of starting, one after the other', async () => {
    const { events, logger, part } = recorder();
    const supervisor = new Supervisor(logger);
    for (const name of ['embedded PostgreSQL', 'Temporal dev server', 'worker', 'API']) await supervisor.start(name, part(name, () => new Promise((resolve) => setTimeout(resolve, 20))));
    supervisor.requestStop(0);
    expect(await supervisor.stopAll()).toBe(0);
    expect(events).toEqual([
      'stopping API',
      'API asked',
      'API stopped',
      'stopping worker',
      'worker asked',
      'worker stopped',
      'stopping Temporal dev server',
      'Temporal dev server asked',
      'Temporal dev server stopped',
      'stopping embedded PostgreSQL',
      'embedded PostgreSQL asked',
      'embedded PostgreSQL stopped',
    ]);
  });

  it('when a part with a bound does not stop within it, then the parts started before it stop once the bound is over, and the exit stays 0', async () => {
    const { events, logger, part } = recorder();
    const supervisor = new Supervisor(logger);
    await supervisor.start('Temporal dev server', part('Temporal dev server'));
    await supervisor.start('worker', part('worker', () => new Promise(() => undefined)), { stopWithinMs: 300 });
    supervisor.requestStop(0);
    const began = Date.now();
    expect(await supervisor.stopAll()).toBe(0);
    const took = Date.now() - began;
    expect(events).toEqual([
      'stopping worker',
      'worker asked',
      'warn: worker did not stop within 300 ms; stopping the rest',
      'stopping Temporal dev server',
      'Temporal dev server asked',
      'Temporal dev server stopped',
    ]);
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1_000);
  });

  it('when a part fails to stop, then the rest still stop and the exit is 1', async () => {
    const { events, logger, part } = recorder();
    const supervisor = new Supervisor(logger);
    await supervisor.start('Temporal dev server', part('Temporal dev server'));
    await supervisor.start('worker', part('worker', () => Promise.reject(new Error('lost'))));
    supervisor.requestStop(0);
    expect(await supervisor.stopAll()).toBe(1);
    expect(events).toEqual(['stopping worker', 'worker asked', 'error', 'stopping Temporal dev server', 'Temporal dev server asked', 'Temporal dev server stopped']);
  });

  it('when a stop was requested, then a part that comes up is refused and stopped with the rest', async () => {
    const { events, logger, part } = recorder();
    const supervisor = new Supervisor(logger);
    supervisor.requestStop(0);
    await expect(supervisor.start('API', part('API'))).rejects.toBeInstanceOf(StopRequested);
    expect(events).toEqual([]);
  });
});
