import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { isUniqueViolation } from '../../db/knex';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { FailedRecord, UsageBatchSummary } from '../../../workflows/usage-batch.types';

export const CHUNK_SIZE = 1000;

export interface UsageBatchRow {
  id: string;
  organisation_id: string;
  idempotency_key: string | null;
  status: 'processing' | 'completed';
  total: number;
  chunk_count: number;
  success: number | null;
  failed: number | null;
  duplicates: number | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface UsageEventRow {
  id: string;
  organisation_id: string;
  customer_entity_id: string;
  metric: string;
  value: string;
  timestamp: Date;
  metadata: Record<string, unknown> | null;
  event_id: string | null;
  job_id: string | null;
  batch_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface UsageEventRecord {
  id: string;
  CustomerEntityId: string;
  metric: string;
  value: string;
  timestamp: string;
  metadata: Record<string, unknown> | null;
  eventId: string | null;
  jobId: string | null;
  batchId: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toUsageEvent(row: UsageEventRow): UsageEventRecord {
  return {
    id: row.id,
    CustomerEntityId: row.customer_entity_id,
    metric: row.metric,
    value: row.value,
    timestamp: row.timestamp.toISOString(),
    metadata: row.metadata,
    eventId: row.event_id,
    jobId: row.job_id,
    batchId: row.batch_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export interface UsageFilter {
  customerEntityId?: string;
  metric?: string;
  from?: Date;
  to?: Date;
}

function applyFilter(query: Knex.QueryBuilder, filter: UsageFilter): Knex.QueryBuilder {
  if (filter.customerEntityId) query.where('customer_entity_id', filter.customerEntityId);
  if (filter.metric) query.where('metric', filter.metric);
  if (filter.from) query.where('timestamp', '>=', filter.from);
  if (filter.to) query.where('timestamp', '<', filter.to);
  return query;
}

export function createUsageRepository(db: Knex) {
  return {
    /**
     * The claim check: the raw batch is stored, split into chunks, before any workflow starts. With an
     * idempotency key, a second call finds the first batch instead.
     */
    async createBatch(organisationId: string, events: unknown[], idempotencyKey?: string): Promise<UsageBatchRow> {
      const id = newId('ubt');
      const chunkCount = Math.ceil(events.length / CHUNK_SIZE);
      try {
        return await db.transaction(async (trx) => {
          const [batch] = await trx<UsageBatchRow>('usage_batches')
            .insert({ id, organisation_id: organisationId, idempotency_key: idempotencyKey ?? null, total: events.length, chunk_count: chunkCount })
            .returning('*');
          const chunks = Array.from({ length: chunkCount }, (_, chunkIndex) => ({
            batch_id: id,
            chunk_index: chunkIndex,
            organisation_id: organisationId,
            start_index: chunkIndex * CHUNK_SIZE,
            events: JSON.stringify(events.slice(chunkIndex * CHUNK_SIZE, (chunkIndex + 1) * CHUNK_SIZE)),
          }));
          await trx('usage_batch_chunks').insert(chunks);
          return batch!;
        });
      } catch (error) {
        if (idempotencyKey && isUniqueViolation(error)) {
          const existing = await db<UsageBatchRow>('usage_batches').where({ organisation_id: organisationId, idempotency_key: idempotencyKey }).first();
          if (existing) return existing;
        }
        throw error;
      }
    },

    async findBatchByIdempotencyKey(organisationId: string, idempotencyKey: string): Promise<UsageBatchRow | undefined> {
      return db<UsageBatchRow>('usage_batches').where({ organisation_id: organisationId, idempotency_key: idempotencyKey }).first();
    },

    async findBatch(organisationId: string, id: string): Promise<UsageBatchRow | undefined> {
      return db<UsageBatchRow>('usage_batches').where({ organisation_id: organisationId, id }).first();
    },

    /** The failures of a batch, read from its chunks' stored outcomes. */
    async failedRecords(batchId: string): Promise<FailedRecord[]> {
      const rows = await db('usage_batch_chunks')
        .where({ batch_id: batchId })
        .whereNotNull('outcome')
        .orderBy('chunk_index')
        .select<{ failed: FailedRecord[] }[]>(db.raw("outcome->'failedRecords' as failed"));
      return rows.flatMap((row) => row.failed);
    },

    summaryOf(batch: UsageBatchRow): UsageBatchSummary | null {
      if (batch.status !== 'completed') return null;
      return { success: batch.success ?? 0, failed: batch.failed ?? 0, total: batch.total, duplicates: batch.duplicates ?? 0 };
    },

    async findEvent(organisationId: string, id: string): Promise<UsageEventRow | undefined> {
      return db<UsageEventRow>('usage_events').where({ organisation_id: organisationId, id }).first();
    },

    async listEvents(organisationId: string, filter: UsageFilter, paging: PageQuery): Promise<Page<UsageEventRecord>> {
      const query = applyFilter(db('usage_events').where({ organisation_id: organisationId }).select('*'), filter);
      return paginate<UsageEventRow, UsageEventRecord>(query, paging, { searchColumns: ['metric', 'event_id'], map: toUsageEvent });
    },

    async updateEvent(
      organisationId: string,
      id: string,
      changes: { value?: string; timestamp?: Date; metadata?: Record<string, unknown> | null },
    ): Promise<UsageEventRow | undefined> {
      const [row] = await db('usage_events')
        .where({ organisation_id: organisationId, id })
        .update({
          ...(changes.value !== undefined ? { value: changes.value } : {}),
          ...(changes.timestamp !== undefined ? { timestamp: changes.timestamp } : {}),
          ...(changes.metadata !== undefined ? { metadata: changes.metadata === null ? null : JSON.stringify(changes.metadata) } : {}),
          updated_at: db.fn.now(),
        })
        .returning<UsageEventRow[]>('*');
      return row;
    },

    async deleteEvents(organisationId: string, ids: string[]): Promise<string[]> {
      const rows = await db('usage_events').where({ organisation_id: organisationId }).whereIn('id', ids).delete().returning<{ id: string }[]>('id');
      return rows.map((row) => row.id);
    },
  };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;
