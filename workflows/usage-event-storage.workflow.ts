import type { UsageEventStorageActivities, UsagePartitionsOutcome, UsageRetentionOutcome } from './usage-event-storage.types';
import { activitiesOf } from './shared';

const storage = activitiesOf<UsageEventStorageActivities>('backfill');

/**
 * Started each day by the `usage-event-storage` Schedule: the event table's partitions are made ahead,
 * then each organisation's retention is applied. Both steps read what to do from Postgres, so a run that
 * fails is made good by the next.
 */
export async function usageEventStorageWorkflow(): Promise<{ partitions: UsagePartitionsOutcome; retention: UsageRetentionOutcome[] }> {
  const partitions = await storage.maintainUsagePartitions();
  const retention = await storage.applyUsageRetention();
  return { partitions, retention };
}
