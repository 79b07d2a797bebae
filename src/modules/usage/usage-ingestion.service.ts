import { domainEvent, type UsageIngested } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { AppError, ERROR_KINDS, orNotFound } from '../../domain/errors';
import { deterministicDatabaseError, isIntegrityViolation } from '../../db/errors';
import type { UsageEvent } from '../../domain/usage-event';
import { summaryOfChunks, type DuplicateEvent, type FailedRecord, type UsageBatchSummary, type UsageChunkInput, type UsageChunkOutcome } from '../../../workflows/usage-batch.types';
import { INLINE_OUTCOMES, type BatchRefusal, type BatchVerdict, type UsageGroupInput, type UsageGroupOutcome } from '../../../workflows/usage-ingestion.types';
import { meterTotalsFolds } from '../../observability/meter-metrics';
import { entitiesIn } from '../customers';
import { foldPendingTotals, lockRollups, rollupAdditions, type RollupMeter } from './meter-rollups';
import { counterAdditions, counterKinds } from './usage-counters';
import { createUsageRepository, type InsertAlongside } from './usage.repository';
import { parseUsageEvent } from './usage.schemas';

/** The contract's per-event codes: 2002 (integer) for an unknown customer entity, "27" (string) for a parse failure. */
const UNKNOWN_ENTITY = { code: 2002, statusCode: 404, error: 'customer entity not found' } as const;
const UNPARSABLE = { code: '27', statusCode: 400 } as const;

/**
 * What `usage.ingested` and `usage.corrected` say of stored events (at least one): the customers their
 * entities belong to (those `customerOf` knows), their metrics, each sorted, and their earliest and latest
 * timestamps.
 */
export function usageSpanOf<E extends { metric: string; timestamp: Date }>(events: readonly E[], customerOf: (event: E) => string | undefined): Pick<UsageIngested, 'customerIds' | 'metrics' | 'from' | 'to'> {
  let from = events[0]!.timestamp;
  let to = from;
  for (const event of events) {
    if (event.timestamp < from) from = event.timestamp;
    if (event.timestamp > to) to = event.timestamp;
  }
  return {
    customerIds: [...new Set(events.flatMap((event) => customerOf(event) ?? []))].sort(),
    metrics: [...new Set(events.map((event) => event.metric))].sort(),
    from: from.toISOString(),
    to: to.toISOString(),
  };
}

/** The `usage.ingested` event of a chunk that stored `written` (each event's entity is in `customerOf`). */
function ingested(input: UsageChunkInput, written: readonly UsageEvent[], customerOf: ReadonlyMap<string, string>): UsageIngested {
  return { batchId: input.batchId, chunkIndex: input.chunkIndex, events: written.length, ...usageSpanOf(written, (event) => customerOf.get(event.customerEntityId)) };
}

/** A failure the same input would meet again (an `AppError` of a business kind, a value Postgres refuses): the batch's refusal. */
function refusalOf(error: unknown): BatchRefusal | undefined {
  const known = error instanceof AppError ? (ERROR_KINDS[error.kind].retryable ? undefined : error) : deterministicDatabaseError(error);
  return known && { kind: known.kind, message: known.message, items: known.items };
}

/**
 * Runs `work` on every item, at most `width` at a time, each in one of `width` lanes (the lane's number is
 * given: no two items of one lane run at once). The first failure stops the items not yet begun and is
 * thrown once the running ones have ended, so that nothing is left running behind it.
 */
async function inTurns<T>(items: readonly T[], width: number, work: (item: T, lane: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async (_: unknown, index: number) => {
    while (!failure && next < items.length) {
      const item = items[next]!;
      next += 1;
      try {
        await work(item, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  if (failure) throw failure.error;
}

/** Chunk transactions of a group written at once: the group's share of Postgres's connections and cores. */
const GROUP_WIDTH = 4;

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
  const service = {
    /**
     * Checks, deduplicates and writes one chunk. Guard, lock, transition: the chunk row is locked and its
     * outcome stored in the same transaction as the events, so a retry returns the stored outcome
     * instead of writing twice. The events stored are added to the rollups of the organisation's meters in
     * that transaction too, under the shared rollup lock (see `lockRollups`): a chunk's events are in the
     * rollups exactly when they are stored. `stripe` names the stripe of the usage counters' day rows the
     * chunk adds to: chunks written at once give different ones, so that they never wait for each other.
     */
    async ingestChunk(input: UsageChunkInput, stripe = 0): Promise<UsageChunkOutcome> {
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
            ...counterAdditions(trx, input.organisationId, meters, await counterKinds(trx, input.organisationId), metrics, known, 'inserted', stripe),
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

    /**
     * A group of batches submitted together (group commit): every chunk of every batch, `GROUP_WIDTH` chunk
     * transactions at a time, then each batch completed with its merged counts. A batch one of whose chunks
     * is refused (abandoned, a value Postgres cannot hold) is marked failed with the reason and the rest of
     * the group goes on; any other failure (Postgres away) is thrown for the step to retry, and chunks
     * already written answer their stored outcomes then.
     */
    async ingestGroup(input: UsageGroupInput): Promise<UsageGroupOutcome> {
      // Each batch's chunk outcomes by chunk index: chunks finish in any order.
      const outcomes = new Map<string, UsageChunkOutcome[]>(input.batches.map((batch) => [batch.batchId, []]));
      const refusals = new Map<string, BatchRefusal>();
      const chunks = input.batches.flatMap((batch) => Array.from({ length: batch.chunkCount }, (_, chunkIndex) => ({ batchId: batch.batchId, chunkIndex })));
      await inTurns(chunks, GROUP_WIDTH, async ({ batchId, chunkIndex }, lane) => {
        if (refusals.has(batchId)) return;
        try {
          outcomes.get(batchId)![chunkIndex] = await service.ingestChunk({ batchId, organisationId: input.organisationId, chunkIndex }, lane);
        } catch (error) {
          // The chunk's rows met another writer's (a worker that stalled mid-chunk and came back, an entity
          // deleted meanwhile): the group is tried again, and the retry finds the chunk's stored outcome, or
          // the event's entity unknown. Never a refusal of the batch, which would keep only part of it.
          if (isIntegrityViolation(error)) {
            throw new Error(`chunk ${chunkIndex} of batch ${batchId} met a concurrent write (${(error as { code: string }).code}); the group is tried again`, { cause: error });
          }
          const refusal = refusalOf(error);
          if (!refusal) throw error;
          refusals.set(batchId, refusal);
        }
      });
      const verdicts = new Map<string, BatchVerdict>();
      let inlineLeft = INLINE_OUTCOMES;
      await inTurns(input.batches, GROUP_WIDTH, async ({ batchId }) => {
        const refusal = refusals.get(batchId);
        if (refusal) {
          await service.failBatch({ batchId, error: refusal.items.map((item) => item.message).join('; ') });
          verdicts.set(batchId, { batchId, refusal });
          return;
        }
        const chunkOutcomes = outcomes.get(batchId)!;
        const summary = summaryOfChunks(chunkOutcomes);
        await service.completeBatch({ batchId, summary });
        const failedRecords = chunkOutcomes.flatMap((outcome) => outcome.failedRecords);
        const duplicateEvents = chunkOutcomes.flatMap((outcome) => outcome.duplicateEvents ?? []);
        const inline = failedRecords.length + duplicateEvents.length;
        // The per-event outcomes ride the result while the group's budget lasts; the API reads the rest from Postgres.
        if (inline > inlineLeft) verdicts.set(batchId, { batchId, summary });
        else {
          inlineLeft -= inline;
          verdicts.set(batchId, { batchId, summary, failedRecords, duplicateEvents });
        }
      });
      return { verdicts: input.batches.map((batch) => verdicts.get(batch.batchId)!) };
    },

    /** Marks each batch of a group that gave up failed with the reason. */
    async failBatches(input: { batchIds: string[]; error: string }): Promise<void> {
      for (const batchId of input.batchIds) await service.failBatch({ batchId, error: input.error });
    },
  };
  return service;
}

export type UsageIngestionService = ReturnType<typeof createUsageIngestionService>;
