import type { Knex } from 'knex';
import { createUsageRepository } from './usage.repository';

export { createUsageIngestionService } from './usage-ingestion.service';
export type { RollupMetersOf } from './usage-ingestion.service';
export { aggregateUsage, aggregateUsageWindows, emptyAggregate, pathOf, readsRollups } from './usage-aggregates';
export { addEventsToTotals, dropRollups, foldPendingTotals, lockRollups, nextEventAt, rebuildRollups } from './meter-rollups';
export type { BucketRange, RollupMeter } from './meter-rollups';
export { bucketOf, onBucketEdge, utcDayOf } from './rollup-buckets';
export { COUNTABLE, counterDaysSince, counterSums, meterIsCounted, refoldCountersOfMeter, releaseCounter, sumCounterDays, takeCounter } from './usage-counters';
export type { CounterDay, CounterIdentity, CounterSpan } from './usage-counters';
export type { AggregationSpec, MeterRollups, MetadataFilter, UsageGroup, UsageMember, UsageQuery, UsageWindow, UsageWindowQuery, WindowSize } from './usage-aggregates';
export type { Aggregation, UsageBatchRow } from './usage.repository';
export { batchRecordSchema, batchResultSchema, usageEventSchema } from './usage.schemas';
export { createUsageService } from './usage.service';
export { createUsageEventStorageService } from './event-storage.service';
export type { UsageEventStorageService } from './event-storage.service';
export { ensureUsageEventStorageSchedule } from './event-storage-schedule';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type UsageAccess = Pick<ReturnType<typeof createUsageRepository>, 'countBatchesByStatus'>;
export const usageIn = (db: Knex): UsageAccess => createUsageRepository(db);
