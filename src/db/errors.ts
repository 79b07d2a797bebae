import { AppError } from '../domain/errors';

/**
 * Postgres errors that say the statement itself is wrong for the data, so running it again cannot help:
 * SQLSTATE class 22 (data exception: a value too large for its column, a bad date, a NUL byte) and class
 * 23 (integrity violation: a duplicate key, a missing referenced row). Anything else (a lost connection,
 * a serialization failure, a deadlock) may pass on a retry and is left as it is.
 */
export function deterministicDatabaseError(error: unknown): AppError | undefined {
  const sqlState = (error as { code?: unknown } | null)?.code;
  if (typeof sqlState !== 'string' || !/^[0-9A-Z]{5}$/.test(sqlState)) return undefined;
  if (sqlState.startsWith('22')) return AppError.validation('A value does not fit what the database can store');
  if (sqlState.startsWith('23')) return AppError.conflict('The change conflicts with data already stored');
  return undefined;
}
