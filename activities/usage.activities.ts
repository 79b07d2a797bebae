import type { Knex } from 'knex';
import { newId } from '../src/db/ids';
import { parseUsageEvent, type UsageEvent } from '../src/domain/usage-event';
import type {
  FailedRecord,
  UsageBatchSummary,
  UsageChunkInput,
  UsageChunkOutcome,
} from '../workflows/usage-batch.types';
import { AppError } from '../src/domain/errors';
import { withHeartbeat } from './adapter';

/** The contract's per-event codes: 2002 (integer) for an unknown customer entity, "27" (string) for a parse failure. */
const UNKNOWN_ENTITY = { code: 2002, statusCode: 404, error: 'customer entity not found' } as const;
const UNPARSABLE = { code: '27', statusCode: 400 } as const;

interface ChunkRow {
  batch_id: string;
  chunk_index: number;
  organisation_id: string;
  start_index: number;
  events: unknown[] | null;
  outcome: UsageChunkOutcome | null;
}

async function knownCustomerEntities(trx: Knex.Transaction, organisationId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await trx('entities')
    .where({ organisation_id: organisationId, type: 'customer' })
    .whereNull('deleted_at')
    .whereIn('id', ids)
    .select<{ id: string }[]>('id');
  return new Set(rows.map((row) => row.id));
}

/**
 * One multi-row insert; a repeated eventId is skipped by the unique index in the same statement, so the
 * key is never claimed without the row. Rows go in eventId order so that concurrent batches sharing
 * ids take their locks in one order and cannot deadlock.
 */
async function insertEvents(trx: Knex.Transaction, organisationId: string, batchId: string, events: UsageEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const rows = [...events]
    .sort((a, b) => (a.eventId ?? '').localeCompare(b.eventId ?? ''))
    .map((event) => ({
      id: newId('evt'),
      customer_entity_id: event.customerEntityId,
      metric: event.metric,
      value: event.value,
      ts: event.timestamp.toISOString(),
      metadata: event.metadata,
      event_id: event.eventId,
      job_id: event.jobId,
    }));
  const result = await trx.raw<{ rowCount: number }>(
    `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, job_id, batch_id)
     SELECT t.id, ?, t.customer_entity_id, t.metric, t.value, t.ts, t.metadata, t.event_id, t.job_id, ?
     FROM jsonb_to_recordset(?::jsonb) AS t(id text, customer_entity_id text, metric text, value numeric, ts timestamptz, metadata jsonb, event_id text, job_id text)
     ON CONFLICT (organisation_id, event_id) WHERE event_id IS NOT NULL DO NOTHING`,
    [organisationId, batchId, JSON.stringify(rows)],
  );
  return result.rowCount;
}

/**
 * Checks, deduplicates and writes one chunk. Guard, lock, transition: the chunk row is locked and its
 * outcome stored in the same transaction as the events, so a retried activity returns the stored
 * outcome instead of writing twice.
 */
async function ingestChunk(trx: Knex.Transaction, input: UsageChunkInput): Promise<UsageChunkOutcome> {
  const chunk = await trx<ChunkRow>('usage_batch_chunks')
    .where({ batch_id: input.batchId, chunk_index: input.chunkIndex, organisation_id: input.organisationId })
    .forUpdate()
    .first();
  if (!chunk) throw new AppError('not_found', `chunk ${input.chunkIndex} of batch ${input.batchId} not found`);
  if (chunk.outcome) return chunk.outcome;

  const failedRecords: FailedRecord[] = [];
  const parsed: Array<{ index: number; event: UsageEvent }> = [];
  (chunk.events ?? []).forEach((raw, offset) => {
    const index = chunk.start_index + offset;
    const result = parseUsageEvent(raw);
    if (result.ok) parsed.push({ index, event: result.event });
    else failedRecords.push({ index, error: result.error, ...UNPARSABLE });
  });

  const known = await knownCustomerEntities(trx, input.organisationId, [...new Set(parsed.map((p) => p.event.customerEntityId))]);
  const accepted: UsageEvent[] = [];
  const seenEventIds = new Set<string>();
  let duplicatesInChunk = 0;
  for (const { index, event } of parsed) {
    if (!known.has(event.customerEntityId)) {
      failedRecords.push({ index, ...UNKNOWN_ENTITY });
    } else if (event.eventId !== null && seenEventIds.has(event.eventId)) {
      duplicatesInChunk += 1;
    } else {
      if (event.eventId !== null) seenEventIds.add(event.eventId);
      accepted.push(event);
    }
  }

  const inserted = await insertEvents(trx, input.organisationId, input.batchId, accepted);
  const outcome: UsageChunkOutcome = {
    // A repeated eventId is a success that is stored once.
    success: accepted.length + duplicatesInChunk,
    failed: failedRecords.length,
    duplicates: duplicatesInChunk + (accepted.length - inserted),
    failedRecords: failedRecords.sort((a, b) => a.index - b.index),
  };
  await trx('usage_batch_chunks')
    .where({ batch_id: input.batchId, chunk_index: input.chunkIndex })
    .update({ outcome: JSON.stringify(outcome), events: null });
  return outcome;
}

export function createUsageActivities(deps: { db: Knex }) {
  const { db } = deps;
  return {
    async ingestUsageChunk(input: UsageChunkInput): Promise<UsageChunkOutcome> {
      return withHeartbeat(() => db.transaction((trx) => ingestChunk(trx, input)));
    },

    /** Records the merged counts; a second call changes nothing. */
    async completeUsageBatch(input: { batchId: string; summary: UsageBatchSummary }): Promise<void> {
      await db('usage_batches').where({ id: input.batchId, status: 'processing' }).update({
        status: 'completed',
        success: input.summary.success,
        failed: input.summary.failed,
        duplicates: input.summary.duplicates,
        completed_at: db.fn.now(),
      });
    },
  };
}

export type UsageActivities = ReturnType<typeof createUsageActivities>;
