import type { Knex } from 'knex';
import { maintainPartitions, type PartitionMaintenance } from './event-partitions';
import { usageRetentions } from '../organisation-settings';
import { applyRetention, type RetentionOutcome } from './event-retention';

/**
 * The event table's upkeep, run each day by the `usage-event-storage` Schedule: partitions made ahead (and
 * for months the default partition took events of), then each organisation's retention.
 */
export function createUsageEventStorageService(db: Knex, clock: () => Date = () => new Date()) {
  return {
    maintainPartitions(onProgress?: () => void): Promise<PartitionMaintenance> {
      return maintainPartitions(db, clock(), onProgress);
    },

    /** Every organisation that set `usageRetentionMonths`, one after the other. */
    async applyRetention(onProgress?: () => void): Promise<RetentionOutcome[]> {
      const outcomes: RetentionOutcome[] = [];
      for (const { organisationId, months } of await usageRetentions(db)) {
        outcomes.push(await applyRetention(db, organisationId, months, clock(), onProgress));
      }
      return outcomes;
    },
  };
}

export type UsageEventStorageService = ReturnType<typeof createUsageEventStorageService>;
