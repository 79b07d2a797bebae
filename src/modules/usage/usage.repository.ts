import type { Knex } from 'knex';
import { formatExact } from '../../domain/money';
import { newId } from '../../db/ids';
import { isUniqueViolation } from '../../db/knex';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { UsageEvent } from '../../domain/usage-event';
import type { DuplicateEvent, FailedRecord, UsageBatchSummary, UsageChunkOutcome } from '../../../workflows/usage-batch.types';

export const CHUNK_SIZE = 1000;

export type UsageBatchStatus = 'processing' | 'completed' | 'failed' | 'abandoned';

export interface UsageBatchRow {
  id: string;
  organisation_id: string;
  idempotency_key: string | null;
  /** SHA-256 of the events' JSON, kept with an idempotency key (null before 2026-12-07). */
  events_fingerprint: string | null;
  status: UsageBatchStatus;
  error: string | null;
  total: number;
  chunk_count: number;
  success: number | null;
  failed: number | null;
  duplicates: number | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface UsageBatchChunkRow {
  batch_id: string;
  chunk_index: number;
  organisation_id: string;
  start_index: number;
  /** The raw events until the chunk is ingested, then null (stored in `raw_events`, or in `events` before it). */
  events: unknown[] | null;
  outcome: UsageChunkOutcome | null;
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
    value: formatExact(row.value),
    timestamp: row.timestamp.toISOString(),
    metadata: row.metadata,
    eventId: row.event_id,
    jobId: row.job_id,
    batchId: row.batch_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** An event as it was before a change. */
export interface UsageEventVersion {
  value: string;
  timestamp: string;
  metadata: Record<string, unknown> | null;
  change: 'edited' | 'deleted';
  changedAt: string;
}

/**
 * The events' current rows copied into their versions, as a common table expression of the statement that
 * changes them: both read the same snapshot, so the version is exactly what the change replaced.
 */
function keepVersions(organisationId: string, ids: readonly string[], change: UsageEventVersion['change']): { sql: string; bindings: Knex.Value[] } {
  return {
    sql: `INSERT INTO usage_event_versions (organisation_id, usage_event_id, customer_entity_id, metric, value, "timestamp", metadata, change)
          SELECT organisation_id, id, customer_entity_id, metric, value, "timestamp", metadata, ? FROM usage_events WHERE organisation_id = ? AND id = ANY(?) RETURNING 1`,
    bindings: [change, organisationId, [...ids]],
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

/** A row `insertEvents` wrote. */
export interface StoredEvent {
  id: string;
  event_id: string | null;
  metric: string;
}

export type Aggregation = 'sum' | 'count' | 'max' | 'unique_count' | 'latest';

/** A common table expression of the chunk's insert (see `insertEvents`): its SQL, and its name when a later one reads it. */
export interface InsertAlongside {
  name?: string;
  sql: string;
  bindings: readonly Knex.Value[];
}

/** Usage batches, their chunks and the stored events. `db` may be a transaction. */
export function createUsageRepository(db: Knex) {
  return {
    /**
     * The claim check: the raw batch is stored, split into chunks, before any workflow starts. With an
     * idempotency key, a second call finds the first batch instead (its caller compares the fingerprints).
     */
    async createBatch(organisationId: string, events: unknown[], key?: { idempotencyKey: string; fingerprint: string }): Promise<UsageBatchRow> {
      const id = newId('ubt');
      const chunkCount = Math.ceil(events.length / CHUNK_SIZE);
      const idempotencyKey = key?.idempotencyKey;
      try {
        return await db.transaction(async (trx) => {
          const [batch] = await trx<UsageBatchRow>('usage_batches')
            .insert({
              id,
              organisation_id: organisationId,
              idempotency_key: idempotencyKey ?? null,
              events_fingerprint: key?.fingerprint ?? null,
              total: events.length,
              chunk_count: chunkCount,
            })
            .returning('*');
          const chunks = Array.from({ length: chunkCount }, (_, chunkIndex) => ({
            batch_id: id,
            chunk_index: chunkIndex,
            organisation_id: organisationId,
            start_index: chunkIndex * CHUNK_SIZE,
            raw_events: JSON.stringify(events.slice(chunkIndex * CHUNK_SIZE, (chunkIndex + 1) * CHUNK_SIZE)),
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

    /** The organisation a batch is of, by its id alone (the workflow's steps carry only the id). */
    async organisationOfBatch(id: string): Promise<string | undefined> {
      const row = await db<UsageBatchRow>('usage_batches').where({ id }).first('organisation_id');
      return row?.organisation_id;
    },

    async findBatch(organisationId: string, id: string): Promise<UsageBatchRow | undefined> {
      return db<UsageBatchRow>('usage_batches').where({ organisation_id: organisationId, id }).first();
    },

    /**
     * The failures and duplicates of a batch, read from its chunks' stored outcomes, each by index. A chunk
     * ingested before duplicates were listed has none to show (its count is in the summary).
     */
    async perEventOutcomes(batchId: string): Promise<{ failedRecords: FailedRecord[]; duplicateEvents: DuplicateEvent[] }> {
      const rows = await db('usage_batch_chunks')
        .where({ batch_id: batchId })
        .whereNotNull('outcome')
        .orderBy('chunk_index')
        .select<{ failed: FailedRecord[]; duplicates: DuplicateEvent[] }[]>(db.raw("outcome->'failedRecords' as failed, coalesce(outcome->'duplicateEvents', '[]'::jsonb) as duplicates"));
      return { failedRecords: rows.flatMap((row) => row.failed), duplicateEvents: rows.flatMap((row) => row.duplicates) };
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
      const versions = keepVersions(organisationId, [id], 'edited');
      const [row] = await db('usage_events')
        .with('kept', db.raw(versions.sql, versions.bindings))
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

    /**
     * Answers the rows deleted, as they were. A deleted event's eventId is given back in the same statement,
     * so that the event can be sent again (retention, which keeps the keys, is another matter).
     */
    async deleteEvents(organisationId: string, ids: string[]): Promise<Array<Pick<UsageEventRow, 'id' | 'metric' | 'customer_entity_id' | 'timestamp'>>> {
      const versions = keepVersions(organisationId, ids, 'deleted');
      const { rows } = await db.raw<{ rows: Array<Pick<UsageEventRow, 'id' | 'metric' | 'customer_entity_id' | 'timestamp'>> }>(
        `WITH kept AS (${versions.sql}),
         deleted AS (
           DELETE FROM usage_events WHERE organisation_id = ? AND id = ANY(?) RETURNING id, metric, customer_entity_id, "timestamp", event_id
         ), released AS (
           DELETE FROM usage_event_keys USING deleted
           WHERE usage_event_keys.organisation_id = ? AND usage_event_keys.event_id = deleted.event_id AND usage_event_keys.usage_event_id = deleted.id
         )
         SELECT id, metric, customer_entity_id, "timestamp" FROM deleted`,
        [...versions.bindings, organisationId, [...ids], organisationId],
      );
      return rows;
    },

    /** The earlier versions of an event, oldest first: each as it was before an edit or the deletion. */
    async versions(organisationId: string, id: string): Promise<UsageEventVersion[]> {
      const rows = await db('usage_event_versions').where({ organisation_id: organisationId, usage_event_id: id }).orderBy('seq');
      return rows.map((row: { value: string; timestamp: Date; metadata: Record<string, unknown> | null; change: 'edited' | 'deleted'; changed_at: Date }) => ({
        value: formatExact(row.value),
        timestamp: row.timestamp.toISOString(),
        metadata: row.metadata,
        change: row.change,
        changedAt: row.changed_at.toISOString(),
      }));
    },

    /** Inside a transaction: the chunk, its row locked until commit. */
    async lockChunk(organisationId: string, batchId: string, chunkIndex: number): Promise<UsageBatchChunkRow | undefined> {
      const row = await db('usage_batch_chunks')
        .where({ batch_id: batchId, chunk_index: chunkIndex, organisation_id: organisationId })
        .forUpdate()
        .first<(Omit<UsageBatchChunkRow, 'events'> & { raw_events: unknown[] | null; events: unknown[] | null }) | undefined>('batch_id', 'chunk_index', 'organisation_id', 'start_index', 'raw_events', 'events', 'outcome');
      if (!row) return undefined;
      const { raw_events: rawEvents, events, ...rest } = row;
      // A chunk stored before `raw_events` existed keeps its events in `events` (jsonb).
      return { ...rest, events: rawEvents ?? events };
    },

    /** The outcome replaces the raw events, which are not needed again. */
    async storeChunkOutcome(batchId: string, chunkIndex: number, outcome: UsageChunkOutcome): Promise<void> {
      await db('usage_batch_chunks').where({ batch_id: batchId, chunk_index: chunkIndex }).update({ outcome: JSON.stringify(outcome), raw_events: null, events: null });
    },

    /**
     * One statement: the eventIds are claimed in `usage_event_keys` and only the rows whose key was claimed
     * (or that have no eventId) are written, so the key is never claimed without the row, and a repeated
     * eventId (in this chunk, or of any earlier month) is skipped. Rows go in eventId order so that
     * concurrent batches sharing ids take their locks in one order and cannot deadlock. `alongside` are statements of the same
     * statement (common table expressions, data-modifying or not) that read the rows written as `inserted`
     * (every column but updated_at), each under its `name` when it has one (so that a later one can read it).
     * Answers the rows written (an event without an eventId is always written): their ids, eventIds and
     * metrics.
     */
    async insertEvents(organisationId: string, batchId: string, events: UsageEvent[], alongside: readonly InsertAlongside[] = []): Promise<StoredEvent[]> {
      if (events.length === 0) return [];
      const rows = [...events].sort((a, b) => (a.eventId ?? '').localeCompare(b.eventId ?? ''));
      // One typed array per column (unnest): cheaper for Postgres than one JSON array of objects, and as
      // cheap as COPY without its extra round trips (bench/insert-forms.ts).
      // Nullable columns are arrays with nulls, which the driver writes as NULL elements.
      const columns = [
        rows.map(() => newId('evt')),
        rows.map((event) => event.customerEntityId),
        rows.map((event) => event.metric),
        rows.map((event) => event.value),
        rows.map((event) => event.timestamp.toISOString()),
        rows.map((event) => (event.metadata === null ? null : JSON.stringify(event.metadata))),
        rows.map((event) => event.eventId),
        rows.map((event) => event.jobId),
      ] as Knex.Value[];
      const result = await db.raw<{ rows: StoredEvent[] }>(
        `WITH input AS MATERIALIZED (
           SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::numeric[], ?::timestamptz[], ?::jsonb[], ?::text[], ?::text[])
             AS t(id, customer_entity_id, metric, value, ts, metadata, event_id, job_id)
         ), claimed AS (
           INSERT INTO usage_event_keys (organisation_id, event_id, usage_event_id)
           SELECT ?, input.event_id, input.id FROM input WHERE input.event_id IS NOT NULL
           ON CONFLICT DO NOTHING
           RETURNING usage_event_id
         ), inserted AS (
           INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, job_id, batch_id)
           SELECT input.id, ?, input.customer_entity_id, input.metric, input.value, input.ts, input.metadata, input.event_id, input.job_id, ?
           FROM input WHERE input.event_id IS NULL OR input.id IN (SELECT usage_event_id FROM claimed)
           RETURNING id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, created_at
         )${alongside.map((statement, index) => `, ${statement.name ?? `alongside_${index}`} AS (${statement.sql})`).join('')}
         SELECT id, event_id, metric FROM inserted`,
        [...columns, organisationId, organisationId, batchId, ...alongside.flatMap((statement) => statement.bindings)],
      );
      return result.rows;
    },

    /**
     * Records the merged counts (also of a failed batch whose retry got through); a completed one is left as
     * it is. Answers the batch if this call completed it (a retry finds it completed already: undefined).
     */
    async completeBatch(batchId: string, summary: UsageBatchSummary): Promise<UsageBatchRow | undefined> {
      const [row] = await db<UsageBatchRow>('usage_batches').where({ id: batchId }).whereIn('status', ['processing', 'failed']).update({
        status: 'completed',
        error: null,
        success: summary.success,
        failed: summary.failed,
        duplicates: summary.duplicates,
        completed_at: db.fn.now() as unknown as Date,
      }).returning('*');
      return row;
    },

    /**
     * Gives up a batch none of whose chunks has been ingested, so that none ever will be: true when it
     * is now `abandoned`. The batch row is locked first, and every chunk ingestion holds a share lock on
     * it while it writes, so either a chunk committed first (and the batch is not abandoned) or the
     * chunk sees `abandoned` and writes nothing.
     */
    async abandonBatch(batchId: string, reason: string): Promise<boolean> {
      return db.transaction(async (trx) => {
        const batch = await trx<UsageBatchRow>('usage_batches').where({ id: batchId }).forUpdate().first();
        if (batch?.status !== 'processing') return false;
        const begun = await trx('usage_batch_chunks').where({ batch_id: batchId }).whereNotNull('outcome').first('chunk_index');
        if (begun) return false;
        await trx('usage_batches').where({ id: batchId }).update({ status: 'abandoned', error: reason, completed_at: trx.fn.now() });
        return true;
      });
    },

    /** The same batch sent again with its Idempotency-Key: an abandoned one goes back to `processing`. */
    async reviveBatch(batchId: string): Promise<void> {
      await db('usage_batches').where({ id: batchId, status: 'abandoned' }).update({ status: 'processing', error: null, completed_at: null });
    },

    /** Inside a chunk's transaction: the batch's status, share-locked until commit (see `abandonBatch`). */
    async shareLockBatchStatus(batchId: string): Promise<UsageBatchStatus | undefined> {
      const row = await db<UsageBatchRow>('usage_batches').where({ id: batchId }).forShare().first('status');
      return row?.status;
    },

    /** Batches by status over every organisation: the operators' metrics. */
    async countBatchesByStatus(): Promise<{ status: string; count: number }[]> {
      return db('usage_batches').groupBy('status').select<{ status: string; count: number }[]>('status', db.raw('count(*)::int AS count'));
    },

    /** A batch whose ingestion gave up: failed with its reason; one that completed is left as it is. */
    async failBatch(batchId: string, error: string): Promise<void> {
      await db('usage_batches').where({ id: batchId, status: 'processing' }).update({ status: 'failed', error, completed_at: db.fn.now() });
    },
  };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;
