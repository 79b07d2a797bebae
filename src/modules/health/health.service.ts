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

async function probe(check: () => Promise<boolean>): Promise<ComponentStatus> {
  try {
    return (await check()) ? 'up' : 'down';
  } catch {
    return 'down';
  }
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

  return {
    /** Every component's status; a 503 naming each component that is down. */
    async check(): Promise<HealthStatus> {
      const [postgres, temporalStatus, worker] = await Promise.all([
        probe(() => pingPostgres(db)),
        probe(async () => Boolean(await handle.client.workflowService.getSystemInfo({}))),
        probe(workerPolling),
      ]);
      const status = { postgres, temporal: temporalStatus, worker };
      const down = Object.entries(status).filter(([, value]) => value === 'down');
      if (down.length > 0) {
        throw new AppError(
          'unavailable',
          'Unhealthy',
          down.map(([component]) => ({ code: ERROR_CODES.unavailable, path: component, message: `${component} is down` })),
        );
      }
      return status;
    },
  };
}

export type HealthService = ReturnType<typeof createHealthService>;
