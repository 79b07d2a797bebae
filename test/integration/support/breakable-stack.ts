import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { findTemporalBinary } from '../../../src/temporal/binaries';
import { freePort, startDevServer, type DevServer } from '../../../src/temporal/dev-server';
import { adminQuery } from './admin-query';
import { startTestApi, type TestApi } from './harness';
import { startTcpProxy, type TcpProxy } from './tcp-proxy';
import { spawnWorker, waitForWorker } from './worker-process';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * An API and a worker with dependencies a test may take away without the rest of the suite noticing:
 * their own Temporal dev server (killed and started again on the same port, its state kept in a file),
 * their own task queue, and the suite's Postgres behind a proxy that can be cut. A stack whose worker
 * relays domain events (`WEBHOOK_RELAY=true`) gets a database of its own beside the suite's: a relay hands
 * on every organisation's events, and would start the workflows of other test files' events on this
 * stack's Temporal server, where those files never find them.
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

/** A fresh database on the suite's Postgres, migrated, dropped by `drop`. */
async function ownDatabase(label: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${process.env.TEST_DATABASE_NAME!}_${label.replace(/\W/g, '_')}_${randomUUID().slice(0, 8)}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = Object.assign(new URL(process.env.DATABASE_URL!), { pathname: `/${name}` }).toString();
  const migrated = await new Promise<{ status: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main/migrate.ts'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
  if (migrated.status !== 0) throw new Error(`migrations of ${name} failed: ${migrated.output}`);
  return { url, drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * `workerEnv`: settings of the worker process alone (e.g. its invoice-run paging); `temporalConfig`: dynamic
 * settings of the stack's Temporal server; `apiEnv`: settings of the API alone.
 */
export async function startBreakableStack(
  label: string,
  workerEnv: Record<string, string> = {},
  temporalConfig: Record<string, number> = {},
  apiEnv: Record<string, string> = {},
): Promise<BreakableStack> {
  const taskQueue = `billing-${label}-${randomUUID()}`;
  const workDir = fs.mkdtempSync(path.join(process.env.TEST_WORK_DIR!, `${label}-`));
  const binary = findTemporalBinary('temporal', process.env.TEMPORAL_CLI_PATH, process.env.PATH ?? '')!;
  const port = await freePort();
  const launch = () => startDevServer({ binary, port, namespace: 'default', dbFilename: path.join(workDir, 'temporal.sqlite'), timeoutMs: 90_000, dynamicConfig: temporalConfig });
  let server = await launch();

  const database = workerEnv.WEBHOOK_RELAY === 'true' ? await ownDatabase(label) : undefined;
  const postgres = new URL(database?.url ?? process.env.DATABASE_URL!);
  const proxy = await startTcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) });
  const viaProxy = new URL(postgres);
  viaProxy.port = String(proxy.port);
  const api = await startTestApi({ ...apiEnv, TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: taskQueue, DATABASE_URL: viaProxy.toString() });

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
      await database?.drop();
    },
  };
}
