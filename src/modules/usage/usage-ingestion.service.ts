import { domainEvent, type UsageIngested } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { UsageEvent } from '../../domain/usage-event';
import type { DuplicateEvent, FailedRecord, UsageBatchSummary, UsageChunkInput, UsageChunkOutcome } from '../../../workflows/usage-batch.types';
import { entitiesIn } from '../customers';
import { lockRollups, rollupAdditions, type RollupMeter } from './meter-rollups';
import { mergePendingTotals } from './rollup-totals';
import { counterAdditions, counterKinds } from './usage-counters';
import { createUsageRepository } from './usage.repository';
import { parseUsageEvent } from './usage.schemas';

/** The contract's per-event codes: 2002 (integer) for an unknown customer entity, "27" (string) for a parse failure. */
const UNKNOWN_ENTITY = { code: 2002, statusCode: 404, error: 'customer entity not found' } as const;
const UNPARSABLE = { code: '27', statusCode: 400 } as const;

/** The `usage.ingested` event of a chunk that stored `written` (each event's entity is in `customerOf`). */
function ingested(input: UsageChunkInput, written: readonly UsageEvent[], customerOf: ReadonlyMap<string, string>): UsageIngested {
  let from = written[0]!.timestamp;
  let to = from;
  for (const event of written) {
    if (event.timestamp < from) from = event.timestamp;
    if (event.timestamp > to) to = event.timestamp;
  }
  return {
    batchId: input.batchId,
    chunkIndex: input.chunkIndex,
    events: written.length,
    customerIds: [...new Set(written.map((event) => customerOf.get(event.customerEntityId)!))].sort(),
    metrics: [...new Set(written.map((event) => event.metric))].sort(),
    from: from.toISOString(),
    to: to.toISOString(),
  };
}

/** The meters of an organisation, as they are defined now, read inside the transaction given. */
export type RollupMetersOf = (trx: Knex, organisationId: string) => Promise<RollupMeter[]>;

/**
 * The steps of the usage batch workflow: a chunk at a time, then the batch's merged counts. `metersOf`
 * names the meters whose rollups a chunk adds to (none without it).
 */
export function createUsageIngestionService(db: Knex, metersOf: RollupMetersOf = async () => []) {
  return {
    /**
     * Checks, deduplicates and writes one chunk. Guard, lock, transition: the chunk row is locked and its
     * outcome stored in the same transaction as the events, so a retry returns the stored outcome
     * instead of writing twice. The events stored are added to the rollups of the organisation's meters in
     * that transaction too, under the shared rollup lock (see `lockRollups`): a chunk's events are in the
     * rollups exactly when they are stored.
     */
    async ingestChunk(input: UsageChunkInput): Promise<UsageChunkOutcome> {
      return db.transaction(async (trx) => {
        const usage = createUsageRepository(trx);
        if ((await usage.shareLockBatchStatus(input.batchId)) === 'abandoned') {
          throw AppError.conflict(`batch ${input.batchId} was abandoned before ingestion began; nothing of it is ingested`);
        }
        const chunk = orNotFound(await usage.lockChunk(input.organisationId, input.batchId, input.chunkIndex), `chunk ${input.chunkIndex} of batch ${input.batchId}`);
        if (chunk.outcome) return chunk.outcome;

        const failedRecords: FailedRecord[] = [];
        const parsed: Array<{ index: number; event: UsageEvent }> = [];
        (chunk.events ?? []).forEach((raw, offset) => {
          const index = chunk.start_index + offset;
          const result = parseUsageEvent(raw);
          if (result.ok) parsed.push({ index, event: result.event });
          else failedRecords.push({ index, error: result.error, ...UNPARSABLE });
        });

        const known = await entitiesIn(trx).liveCustomerEntities(input.organisationId, [...new Set(parsed.map((p) => p.event.customerEntityId))]);
        const accepted: Array<{ index: number; event: UsageEvent }> = [];
        const duplicateEvents: DuplicateEvent[] = [];
        const seenEventIds = new Set<string>();
        for (const { index, event } of parsed) {
          if (!known.has(event.customerEntityId)) {
            failedRecords.push({ index, ...UNKNOWN_ENTITY });
          } else if (event.eventId !== null && seenEventIds.has(event.eventId)) {
            duplicateEvents.push({ index, eventId: event.eventId });
          } else {
            if (event.eventId !== null) seenEventIds.add(event.eventId);
            accepted.push({ index, event });
          }
        }

        const repeatedInChunk = duplicateEvents.length;
        // An event whose eventId the organisation already holds is skipped by the insert: a duplicate too.
        // The rollups of the organisation's meters grow in the insert's own statement, under the shared lock.
        let additions: Array<{ sql: string; bindings: readonly Knex.Value[] }> = [];
        if (accepted.length > 0) {
          await lockRollups(trx, input.organisationId, 'shared');
          const meters = await metersOf(trx, input.organisationId);
          const metrics = new Set(accepted.map(({ event }) => event.metric));
          additions = [
            ...rollupAdditions(trx, meters, metrics, 'inserted'),
            ...counterAdditions(trx, input.organisationId, meters, await counterKinds(trx, input.organisationId), metrics, known, 'inserted'),
          ];
        }
        const stored = await usage.insertEvents(input.organisationId, input.batchId, accepted.map(({ event }) => event), additions);
        const storedIds = new Set(stored.flatMap((row) => (row.event_id === null ? [] : [row.event_id])));
        const written: UsageEvent[] = [];
        for (const { index, event } of accepted) {
          if (event.eventId !== null && !storedIds.has(event.eventId)) duplicateEvents.push({ index, eventId: event.eventId });
          else written.push(event);
        }
        if (written.length > 0) await recordEvent(trx, input.organisationId, domainEvent('usage.ingested', ingested(input, written, known)));
        const outcome: UsageChunkOutcome = {
          // A repeated eventId is a success that is stored once.
          success: accepted.length + repeatedInChunk,
          failed: failedRecords.length,
          duplicates: duplicateEvents.length,
          failedRecords: failedRecords.sort((a, b) => a.index - b.index),
          duplicateEvents: duplicateEvents.sort((a, b) => a.index - b.index),
        };
        await usage.storeChunkOutcome(input.batchId, input.chunkIndex, outcome);
        return outcome;
      });
    },

    /** Records the merged counts, with the `usage.batch_processed` event in the same transaction; a second call changes nothing. */
    async completeBatch(input: { batchId: string; summary: UsageBatchSummary }): Promise<void> {
      // What the batch's chunks appended to the organisation-wide totals, folded in (with any other batch's
      // still pending): reads are exact either way, only faster with fewer pending rows.
      await db.transaction(async (trx) => {
        const organisationId = await createUsageRepository(trx).organisationOfBatch(input.batchId);
        if (!organisationId) return;
        await lockRollups(trx, organisationId, 'shared');
        await mergePendingTotals(trx, organisationId);
      });
      await db.transaction(async (trx) => {
        const usage = createUsageRepository(trx);
        const batch = await usage.completeBatch(input.batchId, input.summary);
        if (!batch) return;
        // The batch as GET /events/batches/{id} shows it, less its failed records and duplicates (read them there).
        await recordEvent(trx, batch.organisation_id, domainEvent('usage.batch_processed', {
          id: batch.id,
          status: batch.status,
          error: batch.error,
          total: batch.total,
          summary: usage.summaryOf(batch),
          createdAt: batch.created_at.toISOString(),
          completedAt: batch.completed_at?.toISOString() ?? null,
        }));
      });
    },

    async failBatch(input: { batchId: string; error: string }): Promise<void> {
      await createUsageRepository(db).failBatch(input.batchId, input.error);
    },
  };
}

export type UsageIngestionService = ReturnType<typeof createUsageIngestionService>;
