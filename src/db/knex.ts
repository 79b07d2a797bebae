import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from 'pino';

// NUMERIC and BIGINT come back as strings so money never passes through a binary float.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export const MIGRATIONS_DIRECTORY = path.resolve(__dirname, '../../migrations');

/**
 * Loads the `.ts` migrations from the sources, or the `.js` ones when this file runs compiled (dist/), and
 * names each after its source file either way, so that knex_migrations reads the same to both.
 */
class MigrationFiles implements Knex.MigrationSource<string> {
  private readonly extension = path.extname(__filename) === '.js' ? '.js' : '.ts';

  async getMigrations(): Promise<string[]> {
    const files = await fs.promises.readdir(MIGRATIONS_DIRECTORY);
    return files
      .filter((file) => path.extname(file) === this.extension && !file.endsWith('.d.ts'))
      .map((file) => path.basename(file, this.extension))
      .sort();
  }

  getMigrationName(stem: string): string {
    return `${stem}.ts`;
  }

  async getMigration(stem: string): Promise<Knex.Migration> {
    return (await import(path.join(MIGRATIONS_DIRECTORY, `${stem}${this.extension}`))) as Knex.Migration;
  }
}

/** Where knex's own messages (a pool that cannot connect, say) go: the process's JSON log, not the console. */
type KnexLogger = Pick<Logger, 'warn' | 'error' | 'debug'>;

function knexLog(logger: KnexLogger): Knex.Config['log'] {
  return {
    warn: (message: unknown) => logger.warn({ knex: message }, 'knex warning'),
    error: (message: unknown) => logger.error({ knex: message }, 'knex error'),
    deprecate: (method: string, alternative: string) => logger.warn({ method, alternative }, 'knex deprecation'),
    debug: (message: unknown) => logger.debug({ knex: message }, 'knex debug'),
  };
}

/**
 * Set on a handle's client configuration when its queries must not be named prepared statements; a
 * transaction's client shares its handle's configuration, so it answers the same.
 */
const NO_PREPARED_STATEMENTS = Symbol('no prepared statements');

/**
 * How long a connection may sit idle inside a transaction before Postgres ends it, and the transaction with
 * its locks: longer than any call to another service made inside one (a payment gateway's charge, which
 * holds its invoice's lock for at most `STRIPE_TIMEOUT_MS`, 120 s at most).
 */
const IDLE_IN_TRANSACTION_MS = 180_000;

/**
 * Every connection's session settings, set per connection rather than in the connection string, so that a
 * pooler that refuses startup options still connects:
 * - no JIT compilation. Postgres compiles a statement whose estimated cost passes `jit_above_cost`, and ours
 *   are short: where the planner cannot see a range (bounds that come from a CTE, as the organisation-wide
 *   meter totals read its pieces) it estimates a million rows, and compiling took 245 ms of a 249 ms read
 *   that found 310 rows. No statement of this service runs long enough to win that back;
 * - a transaction left idle for three minutes is ended, its locks with it. Our transactions send statement
 *   after statement; one that waits that long between two belongs to a process that stopped (a paused VM,
 *   a stopped container) without its connection closing. Until then it would hold what it locked (a usage
 *   chunk, an invoice) from every other worker retrying the same work.
 */
function withSessionSettings(connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void): void {
  connection.query(`SET jit = off; SET idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_MS}`, (error: Error | null) => done(error, connection));
}

/**
 * A connection of the API: with every connection's settings, its statements cancelled by Postgres past `ms`, and dropped from
 * the pool when one got no answer at all within the client's timeout (its server may still be running it,
 * or be gone): the next request gets a fresh connection rather than queue behind it.
 */
function withStatementTimeout(ms: number) {
  return (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void): void => {
    const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
    (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const callback = args.at(-1);
      if (typeof callback !== 'function') return query(...args);
      return query(...args.slice(0, -1), (error: Error | null, result: unknown) => {
        if (error?.message === 'Query read timeout') (connection as unknown as { __knex__disposed?: Error }).__knex__disposed = error;
        (callback as (error: Error | null, result: unknown) => void)(error, result);
      });
    };
    withSessionSettings(connection, (error) => {
      if (error) return done(error, connection);
      connection.query(`SET statement_timeout = ${Math.trunc(ms)}`, (failed: Error | null) => done(failed, connection));
    });
  };
}

/**
 * `queryTimeoutMs`: the longest wait on one statement's answer (the API's), so that a Postgres that stops
 * answering on a connection already open (a frozen server, a network that drops packets) fails the request
 * with a 503 instead of holding it; workers leave it unset, as their longest statements (a backfill's
 * slice, a migration) take what they take.
 */
export function createDb(connectionString: string, poolMax = 10, logger?: KnexLogger, options: { preparedStatements?: boolean; queryTimeoutMs?: number } = {}): Knex {
  const timeout = options.queryTimeoutMs;
  const db = knex({
    ...(logger ? { log: knexLog(logger) } : {}),
    client: 'pg',
    // Bounded waits: a Postgres that is down fails a request in seconds (a 503), never hangs it; TCP
    // keepalives find a peer that vanished. With a query timeout, Postgres cancels a statement that runs
    // past it (the connection stays good), and the client gives up 2 s later on one that gets no answer.
    connection: { connectionString, connectionTimeoutMillis: 3_000, keepAlive: true, ...(timeout ? { query_timeout: timeout + 2_000 } : {}) },
    acquireConnectionTimeout: 5_000,
    pool: { min: 0, max: poolMax, afterCreate: timeout ? withStatementTimeout(timeout) : withSessionSettings },
    migrations: { migrationSource: new MigrationFiles(), tableName: 'knex_migrations' },
  });
  if (options.preparedStatements === false) (db.client.config as Record<symbol, boolean>)[NO_PREPARED_STATEMENTS] = true;
  return db;
}

/**
 * The query options that make a hot, fixed-text query a named prepared statement: each connection parses
 * and plans it once rather than at every call. None where the deployment turned them off
 * (DATABASE_PREPARED_STATEMENTS=false, for a pooler in transaction mode that does not keep them).
 */
export function preparedAs(db: Knex, name: string): { name?: string } {
  return (db.client.config as Record<symbol, boolean | undefined>)[NO_PREPARED_STATEMENTS] ? {} : { name };
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}

/** Postgres unique-violation, for turning a race into a 409 instead of a 500. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as { code?: string; constraint?: string };
  return pgError.code === '23505' && (constraint === undefined || pgError.constraint === constraint);
}
