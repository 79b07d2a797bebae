import { temporal } from '@temporalio/proto';
import { AppError, ERROR_CODES } from '../../domain/errors';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { HEARTBEAT_FRESH_SECONDS, heartbeatsIn } from '../workers';
import { pingPostgres } from './health.repository';

export type ComponentStatus = 'up' | 'down';

export interface HealthStatus {
  postgres: ComponentStatus;
  temporal: ComponentStatus;
  worker: ComponentStatus;
}

/**
 * Temporal's record of pollers lags by about a minute, so it only stands in for the heartbeats when
 * Postgres cannot be read.
 */
const WORKER_POLL_WINDOW_MS = 60_000;

/** Each check gets this long, so that /health answers within a second whatever is down or hanging. */
const CHECK_TIMEOUT_MS = 800;

/** A check's answer, or undefined when it failed or has not answered in time (it may go on unseen). */
async function probe<T>(check: () => Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check(), timeout]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

const verdict = (answer: boolean | undefined): ComponentStatus => (answer ? 'up' : 'down');

function unhealthy(status: Partial<HealthStatus>): AppError | undefined {
  const down = Object.entries(status).filter(([, value]) => value === 'down');
  if (down.length === 0) return undefined;
  return new AppError(
    'unavailable',
    'Unhealthy',
    down.map(([component]) => ({ code: ERROR_CODES.unavailable, path: component, message: `${component} is down` })),
  );
}

export function createHealthService(deps: WorkflowServiceDeps) {
  const { db, temporal: handle } = deps;
  const heartbeats = heartbeatsIn(db);

  async function workerPolling(): Promise<boolean> {
    const { pollers } = await handle.client.workflowService.describeTaskQueue({
      namespace: handle.namespace,
      taskQueue: { name: handle.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const cutoff = Date.now() - WORKER_POLL_WINDOW_MS;
    return pollers.some((poller) => Number(poller.lastAccessTime?.seconds ?? 0) * 1000 >= cutoff);
  }

  const checks = {
    postgres: () => probe(() => pingPostgres(db)),
    temporal: () => probe(async () => Boolean(await handle.client.workflowService.getSystemInfo({}))),
    /**
     * Up when a worker on the queue has written its heartbeat within the window. Both sources are asked at
     * once, so that the answer stays within the time bound when Postgres hangs.
     */
    worker: async () => {
      const [beating, polling] = await Promise.all([
        probe(() => heartbeats.hasBeatWithin(handle.taskQueue, HEARTBEAT_FRESH_SECONDS)),
        probe(workerPolling),
      ]);
      return beating ?? polling;
    },
  };

  return {
    /** Every component's status; a 503 naming each component that is down. */
    async check(): Promise<HealthStatus> {
      const [postgres, temporalStatus, worker] = await Promise.all([checks.postgres(), checks.temporal(), checks.worker()]);
      const status = { postgres: verdict(postgres), temporal: verdict(temporalStatus), worker: verdict(worker) };
      const problem = unhealthy(status);
      if (problem) throw problem;
      return status;
    },

    /** Whether this API can serve requests: its own dependencies, Postgres and Temporal, answer. */
    async ready(): Promise<Pick<HealthStatus, 'postgres' | 'temporal'>> {
      const [postgres, temporalStatus] = await Promise.all([checks.postgres(), checks.temporal()]);
      const status = { postgres: verdict(postgres), temporal: verdict(temporalStatus) };
      const problem = unhealthy(status);
      if (problem) throw problem;
      return status;
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
