import { Context } from '@temporalio/activity';

/**
 * Heartbeats on a timer while `work` runs, so a worker that dies is noticed within the heartbeat
 * timeout instead of the (longer) start-to-close timeout, however long a single query waits.
 */
export async function withHeartbeat<T>(work: () => Promise<T>, everyMs = 2000): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
