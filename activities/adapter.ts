import { Context } from '@temporalio/activity';
import { AppError, toApplicationFailure } from '../src/domain/errors';
import { deterministicDatabaseError } from '../src/db/errors';

/**
 * Heartbeats on a timer while `work` runs, so a worker that dies is noticed within the heartbeat
 * timeout instead of the (longer) start-to-close timeout, however long a single query waits.
 */
export async function withHeartbeat<T>(work: () => Promise<T>, everyMs = 2000): Promise<T> {
  const context = Context.current();
  // A local activity runs inside its workflow task, which the worker keeps alive itself: nothing to beat.
  if (context.info.isLocal) return work();
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * What a failed activity throws: an `AppError` (or a deterministic database error) becomes the typed
 * `ApplicationFailure` of its kind, which the retry policies never retry; anything else is left to retry.
 */
export function toActivityFailure(error: unknown): unknown {
  const known = error instanceof AppError ? error : deterministicDatabaseError(error);
  return known ? toApplicationFailure(known) : error;
}

/** Every activity of `activities`, reporting its failure in the error model's terms (`toActivityFailure`). */
export function reportingFailures<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  const wrapped = Object.entries(activities).map(([name, work]) => [
    name,
    async (...args: never[]) => {
      try {
        return await work(...args);
      } catch (error) {
        throw toActivityFailure(error);
      }
    },
  ]);
  return Object.fromEntries(wrapped) as T;
}
