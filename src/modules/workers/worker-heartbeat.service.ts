import os from 'node:os';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createWorkerHeartbeatRepository } from './workers.repository';

/** How often a worker stamps its row. */
export const HEARTBEAT_INTERVAL_MS = 3_000;

/** A worker whose newest beat is older than this counts as gone: three beats missed, and some slack. */
export const HEARTBEAT_FRESH_SECONDS = 10;

/** Rows of workers that vanished without removing their own are deleted after this long. */
export const HEARTBEAT_RETENTION_SECONDS = 3_600;

export interface HeartbeatOptions {
  db: Knex;
  logger: Logger;
  taskQueue: string;
  identity: string;
  /** Whether the worker still takes new work; one that drains for shutdown stops counting as alive. */
  polling: () => boolean;
  intervalMs?: number;
}

/**
 * Stamps the worker's row in `worker_heartbeats` now and then every few seconds, so that /health sees a
 * dead worker within seconds (Temporal's own record of pollers lags by a minute). A failed beat is logged
 * and the next one tried: Postgres being away does not stop the worker.
 */
export function startWorkerHeartbeat(options: HeartbeatOptions): { stop: () => Promise<void> } {
  const { db, logger, taskQueue, identity, polling, intervalMs = HEARTBEAT_INTERVAL_MS } = options;
  const heartbeats = createWorkerHeartbeatRepository(db);
  const worker = { taskQueue, identity, host: os.hostname(), pid: process.pid, startedAt: new Date() };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  async function beat(): Promise<void> {
    try {
      if (!polling()) {
        await heartbeats.remove(taskQueue, identity);
        return;
      }
      await heartbeats.beat(worker);
      await heartbeats.pruneOlderThan(HEARTBEAT_RETENTION_SECONDS);
    } catch (error) {
      logger.warn({ err: error, taskQueue }, 'worker heartbeat not written');
    }
  }

  // The next beat is scheduled when the last one is done, so that a slow Postgres never stacks them up.
  let current = beat().finally(scheduleNext);
  function scheduleNext(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      current = beat().finally(scheduleNext);
    }, intervalMs);
  }

  return {
    /** Stops beating and removes the row, so that /health notices at once rather than after the window. */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await current;
      await heartbeats.remove(taskQueue, identity).catch((error: unknown) => logger.warn({ err: error, taskQueue }, 'worker heartbeat not removed'));
    },
  };
}
