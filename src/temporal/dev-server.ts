import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from './search-attributes';
import { SetupError } from '../config';

export interface DevServer {
  address: string;
  uiUrl: string | undefined;
  process: ChildProcess;
  stop: () => Promise<void>;
}

/**
 * A port nothing listens on, that the kernel will not hand out again for a while. A port that was merely
 * bound and closed is free for the next `listen(0)` or outgoing connection of any process, which may take it
 * before our server binds it. So the server's side closes a connection to it first, leaving that side in
 * TIME_WAIT (60 s on Linux): the kernel skips the port when it picks one, and a server that binds it by
 * number still can, as Node, Temporal and PostgreSQL all listen with SO_REUSEADDR.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((accepted) => accepted.destroy());
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const client = net.connect(port, '127.0.0.1');
      let closed = false;
      const done = () => {
        if (closed) return;
        closed = true;
        client.destroy();
        server.close(() => resolve(port));
      };
      client.once('close', done);
      client.once('error', done);
      client.resume();
    });
  });
}

async function waitForServer(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new SetupError(`Temporal dev server exited (${child.exitCode ?? child.signalCode})`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new SetupError(`Temporal dev server did not answer at ${address} within ${timeoutMs} ms`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Server settings every dev server we start runs with. The dev server has a single history shard, and a
 * shard's queue of transfer tasks (a new workflow task, a child to start, a child's completion to report)
 * is read at most 20 times a second by default: every hop of a workflow waited up to 50 ms for the next
 * read, so an idle one-event batch took 350 ms. Read as often as tasks arrive; an idle shard still reads
 * only when it is told a task was written.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  // Every batch submitted is an Update of its organisation's ingestion workflow until its group is written;
  // past 10 at once (the server's default) the rest are refused and retried for seconds.
  'history.maxInFlightUpdates': 500,
};

/**
 * Starts `temporal server start-dev` ourselves: the SDK's createLocal waits only 5 s, too little on a
 * small machine. The search attributes are registered at launch.
 */
export async function startDevServer(options: {
  binary: string;
  port: number;
  uiPort?: number;
  dbFilename?: string;
  /** SQLite pragmas of the persistent store (`journal_mode=wal`). */
  sqlitePragmas?: string[];
  namespace: string;
  logStream?: 'inherit' | 'ignore';
  timeoutMs?: number;
  /** Server settings beside `DEV_SERVER_DYNAMIC_CONFIG` (a test's shorter history before continue-as-new is suggested). */
  dynamicConfig?: Readonly<Record<string, number>>;
}): Promise<DevServer> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--namespace', options.namespace, '--log-level', 'error'];
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const pragma of options.sqlitePragmas ?? []) args.push('--sqlite-pragma', pragma);
  for (const [key, value] of Object.entries({ ...DEV_SERVER_DYNAMIC_CONFIG, ...options.dynamicConfig })) args.push('--dynamic-config-value', `${key}=${value}`);
  for (const key of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=Keyword`);
  const child = spawn(options.binary, args, { stdio: ['ignore', options.logStream ?? 'ignore', options.logStream ?? 'ignore'] });
  const address = `127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitForServer(address, child, options.timeoutMs ?? 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return { address, uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined, process: child, stop };
}
