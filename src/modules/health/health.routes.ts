import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { defineRoute, publicAccess, type Route } from '../../http/route';
import type { AppDeps } from '../../deps';

type ComponentStatus = 'up' | 'down';

/** A worker polled within this window counts as alive; Temporal remembers pollers for a few minutes. */
const WORKER_POLL_WINDOW_MS = 60_000;

const healthSchema = z.object({
  postgres: z.enum(['up', 'down']),
  temporal: z.enum(['up', 'down']),
  worker: z.enum(['up', 'down']),
});

async function probe(check: () => Promise<boolean>): Promise<ComponentStatus> {
  try {
    return (await check()) ? 'up' : 'down';
  } catch {
    return 'down';
  }
}

export function healthRoutes(deps: AppDeps): Route[] {
  const { db, temporal: handle } = deps;
  return [
    defineRoute({
      method: 'get',
      path: '/health',
      summary: 'Status of Postgres, Temporal and the worker; 503 when any is down',
      tag: 'Health',
      access: publicAccess,
      response: healthSchema,
      handler: async () => {
        const [postgres, temporalStatus, worker] = await Promise.all([
          probe(async () => (await db.raw('select 1')) !== undefined),
          probe(async () => Boolean(await handle.client.workflowService.getSystemInfo({}))),
          probe(async () => {
            const { pollers } = await handle.client.workflowService.describeTaskQueue({
              namespace: handle.namespace,
              taskQueue: { name: handle.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
              taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            });
            const cutoff = Date.now() - WORKER_POLL_WINDOW_MS;
            return pollers.some((poller) => Number(poller.lastAccessTime?.seconds ?? 0) * 1000 >= cutoff);
          }),
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
    }),
  ];
}
