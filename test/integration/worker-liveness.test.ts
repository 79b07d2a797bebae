import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { freePort } from '../../src/temporal/dev-server';
import { startTestApi, type TestApi } from './support/harness';
import { spawnWorker, waitForWorker } from './support/worker-process';

// A queue of its own, so that killing this worker leaves the suite's shared worker alone.
const taskQueue = `billing-liveness-${randomUUID()}`;
let api: TestApi;
let worker: ChildProcess;
let metricsPort: number;

beforeAll(async () => {
  api = await startTestApi({ TEMPORAL_TASK_QUEUE: taskQueue });
  metricsPort = await freePort();
  worker = spawnWorker({ TEMPORAL_TASK_QUEUE: taskQueue, WORKER_METRICS_PORT: String(metricsPort) }, path.join(process.env.TEST_WORK_DIR!, `${taskQueue}.log`));
  await waitForWorker(process.env.TEMPORAL_ADDRESS!, taskQueue, worker, 180_000);
});
afterAll(async () => {
  if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
  await api.close();
});

/** GET /health, with how long it took. */
async function health(): Promise<{ status: number; errors?: unknown; data?: unknown; ms: number }> {
  const started = Date.now();
  const res = await api.http().get('/health');
  return { status: res.status, errors: res.body.errors, data: res.body.data, ms: Date.now() - started };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('when a worker is started with WORKER_METRICS_PORT, then it serves the Temporal SDK metrics for its queue in the Prometheus text format', async () => {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  for (const name of ['temporal_worker_task_slots_available', 'temporal_num_pollers']) {
    expect(text).toMatch(new RegExp(`^${name}\\{[^}]*task_queue="${taskQueue}"[^}]*\\} \\d+`, 'm'));
  }
});

it('when the worker is killed, then /health names the worker down within 12 s, each answer taking under a second', async () => {
  // The first heartbeat is written as the worker starts polling.
  const upBy = Date.now() + 10_000;
  let answer = await health();
  while (answer.status !== 200 && Date.now() < upBy) {
    await pause(250);
    answer = await health();
  }
  expect(answer).toMatchObject({ status: 200, data: { postgres: 'up', temporal: 'up', worker: 'up' } });

  worker.kill('SIGKILL');
  const killedAt = Date.now();
  const timings: number[] = [];
  for (;;) {
    answer = await health();
    timings.push(answer.ms);
    if (answer.status !== 200 || Date.now() - killedAt > 12_000) break;
    await pause(250);
  }
  expect(Date.now() - killedAt).toBeLessThanOrEqual(12_000);
  expect(answer).toMatchObject({ status: 503, errors: [{ code: 1006, path: 'worker', message: 'worker is down' }] });
  expect(Math.max(...timings)).toBeLessThan(1_000);
});
