import { setTimeout as pause } from 'node:timers/promises';
import { AppError } from '../domain/errors';

/** A Postgres error's SQLSTATE (`23505`), or undefined for any other error (a socket's `ECONNRESET`, say). */
function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Postgres errors that say the statement itself is wrong for the data, so running it again cannot help:
 * SQLSTATE class 22 (data exception: a value too large for its column, a bad date, a NUL byte), class
 * 23 (integrity violation: a duplicate key, a missing referenced row) and class 54 (a limit of the
 * program: an index entry past 2,704 bytes, too many arguments). Anything else (a lost connection, a
 * serialization failure, a deadlock) may pass on a retry and is left as it is.
 */
export function deterministicDatabaseError(error: unknown): AppError | undefined {
  const sqlState = sqlStateOf(error);
  if (sqlState === undefined) return undefined;
  if (sqlState.startsWith('22') || sqlState.startsWith('54')) return AppError.validation('A value does not fit what the database can store');
  if (sqlState === '23503') {
    // A delete of a row others still reference (a plan a plan change names): the row is there, and in use.
    const detail = (error as { detail?: unknown }).detail;
    if (typeof detail === 'string' && detail.includes('is still referenced')) return AppError.conflict('Other records still refer to this one');
    // A reference to a row that does not exist: the same answer as any unknown id.
    return AppError.notFound('A referenced record');
  }
  if (sqlState.startsWith('23')) return AppError.conflict('The change conflicts with data already stored');
  return undefined;
}

/**
 * A unique, foreign-key or check violation (SQLSTATE class 23): refused by the data as it stands, which a
 * concurrent writer may have changed under the statement.
 */
export function isIntegrityViolation(error: unknown): boolean {
  return sqlStateOf(error)?.startsWith('23') ?? false;
}

/**
 * Runs `work` again while it fails with one of `sqlStates` (a deadlock's victim, a lock not granted in
 * time), at most `attempts` times in all, pausing `pauseMs(attempt)` after each failed attempt; any other
 * failure, or the last one, is thrown.
 */
export async function retriedOnSqlState<T>(sqlStates: readonly string[], work: () => Promise<T>, options: { attempts: number; pauseMs: (attempt: number) => number }): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      const sqlState = sqlStateOf(error);
      if (attempt >= options.attempts || sqlState === undefined || !sqlStates.includes(sqlState)) throw error;
      await pause(options.pauseMs(attempt));
    }
  }
}

/**
 * Node socket errors and SQLSTATEs that mean Postgres is not reachable or not serving right now; 57014, a
 * statement cancelled (the API's statement timeout), is a Postgres too slow to answer in time.
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57014', '57P01', '57P02', '57P03']);

/**
 * Whether an error says Postgres is down, restarting or out of reach (as opposed to refusing a
 * statement): a refused or dropped connection, an administrator shutdown, SQLSTATE class 08, or no
 * pool connection within the acquire timeout.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const { code, name, message } = (error ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  if (name === 'KnexTimeoutError') return true;
  // pg's own words: a connection not made within connectionTimeoutMillis ("timeout expired"), a statement
  // not answered within query_timeout ("Query read timeout").
  return typeof message === 'string' && /Connection terminated|connection timeout|timeout expired|Query read timeout|Client has encountered a connection error/i.test(message);
}
