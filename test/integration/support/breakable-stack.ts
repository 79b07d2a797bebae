import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { findTemporalBinary } from '../../../src/temporal/binaries';
import { freePort, startDevServer, type DevServer } from '../../../src/temporal/dev-server';
import { startTestApi, type TestApi } from './harness';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';
import { spawnWorker, waitForWorker } from './worker-process';

/**
 * An API and a worker with dependencies a test may take away without the rest of the suite noticing:
 * their own Temporal dev server (killed and started again on the same port, its state kept in a file),
 * their own task queue, and the suite's Postgres behind a proxy that can be cut.
 */
export interface BreakableStack {
  api: TestApi;
  proxy: TcpProxy;
  workDir: string;
  temporal: () => DevServer;
  worker: () => ChildProcess | undefined;
  killTemporal: () => Promise<void>;
  startTemporal: () => Promise<void>;
  killWorker: () => Promise<void>;
  startWorker: () => Promise<void>;
  close: () => Promise<void>;
}

export async function sigkill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** `workerEnv`: settings of the worker process alone (e.g. its invoice-run paging). */
export async function startBreakableStack(label: string, workerEnv: Record<string, string> = {}): Promise<BreakableStack> {
  const taskQueue = `billing-${label}-${randomUUID()}`;
  const workDir = fs.mkdtempSync(path.join(process.env.TEST_WORK_DIR!, `${label}-`));
  const binary = findTemporalBinary('temporal', process.env.TEMPORAL_CLI_PATH, process.env.PATH ?? '')!;
  const port = await freePort();
  const launch = () => startDevServer({ binary, port, namespace: 'default', dbFilename: path.join(workDir, 'temporal.sqlite'), timeoutMs: 90_000 });
  let server = await launch();

  const postgres = new URL(process.env.DATABASE_URL!);
  const proxy = await startTcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) });
  const viaProxy = new URL(process.env.DATABASE_URL!);
  viaProxy.port = String(proxy.port);
  const api = await startTestApi({ TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: viaProxy.toString() });

  let worker: ChildProcess | undefined;
  const startWorker = async () => {
    worker = spawnWorker({ ...workerEnv, TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: viaProxy.toString() }, path.join(workDir, 'worker.log'));
    await waitForWorker(server.address, taskQueue, worker, 180_000);
  };
  const killWorker = async () => {
    if (worker) await sigkill(worker);
    worker = undefined;
  };
  await startWorker();

  return {
    api,
    proxy,
    workDir,
    temporal: () => server,
    worker: () => worker,
    killTemporal: () => sigkill(server.process),
    startTemporal: async () => {
      server = await launch();
    },
    killWorker,
    startWorker,
    close: async () => {
      proxy.restore();
      await killWorker();
      await api.close();
      await server.stop();
      await proxy.close();
    },
  };
}
