import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { TemporalHandle } from '../../temporal/client';
import { billingKindAttribute, USAGE_EVENT_STORAGE_SCHEDULE_ID, USAGE_EVENT_STORAGE_WORKFLOW_ID } from '../../../workflows/ids';

const STORAGE_WORKFLOW = 'usageEventStorageWorkflow';

/**
 * The event table's daily upkeep: a Temporal Schedule (`usage-event-storage`, every day at 00:30 UTC) that
 * starts `usageEventStorageWorkflow`, which makes the partitions of the months ahead and applies each
 * organisation's retention. Made by each worker as it starts; one that exists already is left as it is.
 */
export async function ensureUsageEventStorageSchedule(temporal: TemporalHandle): Promise<void> {
  try {
    await temporal.bounded(() =>
      temporal.client.schedule.create({
        scheduleId: USAGE_EVENT_STORAGE_SCHEDULE_ID,
        spec: { calendars: [{ hour: 0, minute: 30 }] },
        action: {
          type: 'startWorkflow',
          workflowType: STORAGE_WORKFLOW,
          taskQueue: temporal.taskQueue,
          workflowId: USAGE_EVENT_STORAGE_WORKFLOW_ID,
          args: [],
          typedSearchAttributes: [billingKindAttribute(STORAGE_WORKFLOW)],
        },
        policies: { overlap: ScheduleOverlapPolicy.SKIP },
      }),
    );
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
}
