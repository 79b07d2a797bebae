import { temporal } from '@temporalio/proto';
import { AppError, ERROR_CODES } from '../../domain/errors';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { pingPostgres } from './health.repository';

export type ComponentStatus = 'up' | 'down';

export interface HealthStatus {
  postgres: ComponentStatus;
  temporal: ComponentStatus;
  worker: ComponentStatus;
}

/** A worker polled within this window counts as alive; Temporal remembers pollers for a few minutes. */
const WORKER_POLL_WINDOW_MS = 60_000;

/** Each check gets this long, so that /health answers within a second whatever is down or hanging. */
const CHECK_TIMEOUT_MS = 800;

/** A check's verdict: down when it fails, says no, or has not answered in time (it may go on unseen). */
async function probe(check: () => Promise<boolean>): Promise<ComponentStatus> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return (await Promise.race([check(), timeout])) ? 'up' : 'down';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}

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
    worker: () => probe(workerPolling),
  };

  return {
    /** Every component's status; a 503 naming each component that is down. */
    async check(): Promise<HealthStatus> {
      const [postgres, temporalStatus, worker] = await Promise.all([checks.postgres(), checks.temporal(), checks.worker()]);
      const status = { postgres, temporal: temporalStatus, worker };
      const problem = unhealthy(status);
      if (problem) throw problem;
      return status;
    },

    /** Whether this API can serve requests: its own dependencies, Postgres and Temporal, answer. */
    async ready(): Promise<Pick<HealthStatus, 'postgres' | 'temporal'>> {
      const [postgres, temporalStatus] = await Promise.all([checks.postgres(), checks.temporal()]);
      const status = { postgres, temporal: temporalStatus };
      const problem = unhealthy(status);
      if (problem) throw problem;
      return status;
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
