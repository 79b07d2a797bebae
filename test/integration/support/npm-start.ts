import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '../../../src/temporal/dev-server';

/** `npm start` (src/main/start.ts from the sources) as a test runs it: on free ports, its output kept. */

const ROOT = path.resolve(__dirname, '../../..');

export interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function freePorts() {
  return {
    PORT: await freePort(),
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    EMBEDDED_POSTGRES_PORT: await freePort(),
    METRICS_PORT: await freePort(),
    WORKER_METRICS_PORT: await freePort(),
  };
}

/**
 * `npm start`, in a process group of its own as a terminal's foreground job is, so that a test can send
 * the whole group a Ctrl-C and kill whatever a failed test left.
 */
export function npmStart(env: Record<string, string>, running: ChildProcess[], options: { throughNpm?: boolean } = {}): Started {
  // As package.json's start script runs it: Node with tsx's loader. The tsx command relays a signal itself
  // and, on a loaded machine, ended the launcher with 130 when it had not answered within 30 ms.
  // `throughNpm`: `npm start` itself, as a shell starts it in the background (`npm start &`, `nohup`), with
  // SIGINT ignored: what stops it then is npm passing the signal on to the one process that handles it.
  const child = options.throughNpm
    ? spawn('sh', ['-c', "trap '' INT; exec npm start --silent"], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['--import', 'tsx', 'src/main/start.ts'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

/** Kills every process group a test started, even when its leader has exited: a process left behind would live on. */
export function killGroups(running: ChildProcess[]): void {
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is empty
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
}

export async function healthWithin(started: Started, port: number, timeoutMs: number): Promise<{ status: number; body: unknown }> {
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

export interface ProcessInfo {
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

export function descendantsOf(pid: number): ProcessInfo[] {
  const table = processTable();
  const found: ProcessInfo[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const children = table.get(queue.shift()!) ?? [];
    found.push(...children);
    queue.push(...children.map((child) => child.pid));
  }
  return found;
}

export function stillAlive(processes: ProcessInfo[]): ProcessInfo[] {
  const alive = new Set([...processTable().values()].flat().map((process) => process.pid));
  return processes.filter((process) => alive.has(process.pid));
}

/** The JSON log lines of `npm start`'s output (the summary and other plain lines left out). */
export function logLines(output: string): Array<{ level: number; msg: string } & Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}
