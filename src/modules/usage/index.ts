import type { Knex } from 'knex';
import { createUsageRepository } from './usage.repository';

export { createUsageIngestionService } from './usage-ingestion.service';
export { aggregateUsage, aggregateUsageWindows, emptyAggregate, pathOf } from './usage-aggregates';
export type { AggregationSpec, MetadataFilter, UsageGroup, UsageMember, UsageQuery, UsageWindow, UsageWindowQuery, WindowSize } from './usage-aggregates';
export type { Aggregation, UsageBatchRow } from './usage.repository';
export { batchRecordSchema, batchResultSchema, usageEventSchema } from './usage.schemas';
export { createUsageService } from './usage.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type UsageAccess = Pick<ReturnType<typeof createUsageRepository>, 'countBatchesByStatus'>;
export const usageIn = (db: Knex): UsageAccess => createUsageRepository(db);
