import type { Logger } from 'pino';
import type { LaptopProcess } from './laptop';

/** Thrown by `Supervisor.start` once a stop was requested: the part is not started, or is stopped with the rest. */
export class StopRequested extends Error {
  constructor() {
    super('a stop was requested');
    this.name = 'StopRequested';
  }
}

interface Part extends LaptopProcess {
  name: string;
  stopWithinMs?: number;
}

/** What `npm start` started, stopped in reverse order of starting. */
export class Supervisor {
  private readonly parts: Part[] = [];
  private exitCode: number | undefined;
  private wake: () => void = () => undefined;
  readonly stopRequested = new Promise<void>((resolve) => {
    this.wake = resolve;
  });

  constructor(private readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>) {}

  get stopping(): boolean {
    return this.exitCode !== undefined;
  }

  requestStop(exitCode: number): void {
    this.exitCode ??= exitCode;
    this.wake();
  }

  /**
   * Starts a part unless a stop was requested; one that comes up after the request is stopped with the rest.
   * With `stopWithinMs`, a stop that takes longer is given up on, so that the parts started before it stop too.
   */
  async start<T extends LaptopProcess>(name: string, begin: () => Promise<T>, options: { stopWithinMs?: number } = {}): Promise<T> {
    if (this.stopping) throw new StopRequested();
    const part = await begin();
    this.parts.push({ name, stop: () => part.stop(), kill: part.kill, stopWithinMs: options.stopWithinMs });
    if (this.stopping) throw new StopRequested();
    return part;
  }

  /** A part leaves the list only once stopped, so that a forced exit still kills the one being stopped. */
  async stopAll(): Promise<number> {
    for (let part = this.parts.at(-1); part; part = this.parts.at(-1)) {
      this.logger.info(`stopping ${part.name}`);
      try {
        if ((await stopWithin(part)) === 'late') this.logger.warn(`${part.name} did not stop within ${part.stopWithinMs} ms; stopping the rest`);
      } catch (error) {
        this.exitCode = 1;
        this.logger.error({ err: error }, `${part.name} did not stop cleanly`);
      }
      this.parts.pop();
    }
    return this.exitCode ?? 0;
  }

  kill(): void {
    for (const part of this.parts) part.kill?.();
  }
}

async function stopWithin(part: Part): Promise<'stopped' | 'late'> {
  if (part.stopWithinMs === undefined) {
    await part.stop();
    return 'stopped';
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), part.stopWithinMs);
  });
  try {
    return await Promise.race([part.stop().then(() => 'stopped' as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
