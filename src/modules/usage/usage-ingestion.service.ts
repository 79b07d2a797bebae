import { domainEvent, type UsageIngested } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { UsageEvent } from '../../domain/usage-event';
import type { DuplicateEvent, FailedRecord, UsageBatchSummary, UsageChunkInput, UsageChunkOutcome } from '../../../workflows/usage-batch.types';
import { meterTotalsFolds } from '../../observability/meter-metrics';
import { entitiesIn } from '../customers';
import { foldPendingTotals, lockRollups, rollupAdditions, type RollupMeter } from './meter-rollups';
import { counterAdditions, counterKinds } from './usage-counters';
import { createUsageRepository, type InsertAlongside } from './usage.repository';
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

/** How long a fold of pending totals waits after it is asked for, gathering the chunks of that time into one. */
const FOLD_DELAY_MS = 1_000;
/** Folds that fail in a row (Postgres down) before the organisation waits for its next batch to ask again. */
const FOLD_ATTEMPTS = 5;

/**
 * Folds each organisation's chunks pending for its meters' totals (see `foldPendingTotals`), at most one fold
 * per organisation and `delayMs` in this process: under load, one fold takes every chunk of the last second.
 * Postgres holds what is pending, so nothing depends on a fold running: reads are exact either way (only
 * slower over pending chunks), a rebuild folds first, and a fold that fails or is lost with the process is
 * done by the organisation's next batch.
 */
function createTotalsFolder(db: Knex, metersOf: RollupMetersOf, delayMs: number) {
  const waiting = new Map<string, NodeJS.Timeout>();
  const fold = async (organisationId: string, attempt: number): Promise<void> => {
    waiting.delete(organisationId);
    try {
      // A statement of bounded size per transaction, until nothing is left.
      for (;;) {
        const folded = await db.transaction(async (trx) => {
          await lockRollups(trx, organisationId, 'shared');
          return foldPendingTotals(trx, organisationId, await metersOf(trx, organisationId));
        });
        meterTotalsFolds.inc({ outcome: folded === false ? 'busy' : 'folded' });
        // Another fold of the organisation holds its lock: what it did not see is taken by the next.
        if (folded === false) ask(organisationId, 1);
        if (folded === false || !folded.more) return;
      }
    } catch {
      meterTotalsFolds.inc({ outcome: 'failed' });
      if (attempt < FOLD_ATTEMPTS) ask(organisationId, attempt + 1);
    }
  };
  const ask = (organisationId: string, attempt = 1): void => {
    if (waiting.has(organisationId)) return;
    const timer = setTimeout(() => void fold(organisationId, attempt), delayMs * attempt);
    // A fold never keeps the process alive: what it would take stays pending in Postgres.
    timer.unref();
    waiting.set(organisationId, timer);
  };
  return { ask };
}

/**
 * The steps of the usage batch workflow: a chunk at a time, then the batch's merged counts. `metersOf`
 * names the meters whose rollups a chunk adds to (none without it).
 */
export function createUsageIngestionService(db: Knex, metersOf: RollupMetersOf = async () => [], foldDelayMs = FOLD_DELAY_MS) {
  const totals = createTotalsFolder(db, metersOf, foldDelayMs);
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
        let additions: InsertAlongside[] = [];
        if (accepted.length > 0) {
          await lockRollups(trx, input.organisationId, 'shared');
          const meters = await metersOf(trx, input.organisationId);
          const metrics = new Set(accepted.map(({ event }) => event.metric));
          additions = [
            ...rollupAdditions(trx, meters, metrics, 'inserted', input.batchId),
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
      const organisationId = await db.transaction(async (trx) => {
        const usage = createUsageRepository(trx);
        const batch = await usage.completeBatch(input.batchId, input.summary);
        // Completed before (a retried step): its organisation, for the fold below.
        if (!batch) return usage.organisationOfBatch(input.batchId);
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
        return batch.organisation_id;
      });
      // The chunks the batch left pending for the organisation-wide totals, folded soon with any others.
      if (organisationId) totals.ask(organisationId);
    },

    async failBatch(input: { batchId: string; error: string }): Promise<void> {
      await createUsageRepository(db).failBatch(input.batchId, input.error);
    },
  };
}

export type UsageIngestionService = ReturnType<typeof createUsageIngestionService>;
