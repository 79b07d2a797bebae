import { createHash } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import type { Knex } from 'knex';
import { isDatabaseUnavailable, retriedOnSqlState } from '../../db/errors';
import { AppError, ERROR_CODES, orNotFound } from '../../domain/errors';
import { domainEvent, type UsageCorrected } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import { entitiesIn } from '../customers';
import { storableEvent } from '../../domain/usage-event';
import type { Page, PageQuery } from '../../http/paging';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporalUnavailable, type WorkflowServiceDeps } from '../../temporal/client';
import { ingestionShardOf, searchAttributes, usageBatchWorkflowId, usageIngestionWorkflowId } from '../../../workflows/ids';
import type { DuplicateEvent, FailedRecord, UsageBatchSummary } from '../../../workflows/usage-batch.types';
import { submitBatchSignal, submitBatchUpdate, submittedBatchQuery, type BatchOutcome, type SubmittedBatch } from '../../../workflows/usage-ingestion.types';
import { lockRollups, rebuildRollups, touchedBuckets } from './meter-rollups';
import { usageSpanOf, type RollupMetersOf } from './usage-ingestion.service';
import { refoldTouchedDays } from './usage-counters';
import { createUsageRepository, toUsageEvent, type UsageBatchRow, type UsageBatchStatus, type UsageEventRecord, type UsageEventVersion, type UsageFilter } from './usage.repository';

export const MAX_BATCH_EVENTS = 10_000;

export interface BatchRecord {
  id: string;
  status: UsageBatchStatus;
  error: string | null;
  total: number;
  summary: UsageBatchSummary | null;
  failedRecords: FailedRecord[];
  duplicateEvents: DuplicateEvent[];
  createdAt: string;
  completedAt: string | null;
}

export interface BatchResult {
  batchId: string;
  summary: UsageBatchSummary;
  failedRecords: FailedRecord[];
  duplicateEvents: DuplicateEvent[];
}

/** A batch's answer: its per-event outcomes, or (202) the batch still under way. */
export type IngestOutcome = { state: 'done'; result: BatchResult } | { state: 'pending'; batch: BatchRecord };

/** How long a submit waits for its batch's outcomes before it answers 202 with the batch id. */
export const SUBMIT_WAIT_MS = 7_000;

/** How long a batch may be `processing` without a workflow before a read marks it failed. */
const ORPHAN_AFTER_MS = 60_000;

/** The pause before a batch refused by a draining run is sent again (the next run starts within it). */
const DRAINING_RETRY_MS = 25;

const isUnavailable = (error: unknown) => error instanceof AppError && error.kind === 'unavailable';

/**
 * The `usage.corrected` event of a change of stored events: the customers of the entities it touched (their
 * events before and after the change), the metrics, and the span of timestamps; none when no live customer
 * entity is touched.
 */
async function correctedOf(trx: Knex, organisationId: string, changed: number, touched: ReadonlyArray<{ metric: string; customer_entity_id: string; timestamp: Date }>): Promise<UsageCorrected | undefined> {
  const customerOf = await entitiesIn(trx).liveCustomerEntities(organisationId, [...new Set(touched.map((event) => event.customer_entity_id))]);
  const span = usageSpanOf(touched, (event) => customerOf.get(event.customer_entity_id));
  return span.customerIds.length === 0 ? undefined : { events: changed, ...span };
}

/**
 * Runs `work` (one transaction) again when Postgres chose it as a deadlock's victim or refused it as a
 * serialization failure, up to three times: a change of stored events meets the relay's reactions on the
 * same counters and rollups, and either may have to give way. Nothing of a failed attempt is committed.
 */
function retriedOnDeadlock<T>(work: () => Promise<T>): Promise<T> {
  return retriedOnSqlState(['40P01', '40001'], work, { attempts: 3, pauseMs: (attempt) => 20 * attempt });
}

/**
 * Every way usage enters the system goes through here: one path, one set of rules. `shards`: the ingestion
 * workflows of each organisation, over which its batches are spread (USAGE_INGESTION_SHARDS).
 */
export function createUsageService(deps: WorkflowServiceDeps, metersOf: RollupMetersOf = async () => [], shards = 1) {
  const usage = createUsageRepository(deps.db);

  /**
   * A change of stored events, in one transaction with the rebuild of the rollups and counters it touches:
   * under the exclusive rollup lock, each (meter, entity, bucket) an event left or entered is folded anew
   * from its raw events, for every meter of the event's metric, and so is each day of its customer's counters.
   */
  async function changingEvents<T>(
    organisationId: string,
    change: (trx: Knex) => Promise<{ result: T; changed: number; touched: Array<{ metric: string; customer_entity_id: string; timestamp: Date }> }>,
  ): Promise<T> {
    return retriedOnDeadlock(() => deps.db.transaction(async (trx) => {
      await lockRollups(trx, organisationId, 'exclusive');
      const { result, changed, touched } = await change(trx);
      if (touched.length === 0) return result;
      const meters = await metersOf(trx, organisationId);
      for (const [metric, ranges] of touchedBuckets(touched)) {
        for (const meter of meters.filter((candidate) => candidate.metric === metric)) await rebuildRollups(trx, organisationId, meter, ranges);
      }
      await refoldTouchedDays(trx, organisationId, meters, touched);
      // Alerts, exhaustion and progressive billing look again at what the change moved, as after ingestion.
      const corrected = await correctedOf(trx, organisationId, changed, touched);
      if (corrected) await recordEvent(trx, organisationId, domainEvent('usage.corrected', corrected));
      return result;
    }));
  }
  const { temporal } = deps;
  const { workflows } = temporal;
  /** The ingestion workflow that takes a batch: its organisation's, of the batch's shard. */
  const ingestionOf = (organisationId: string, batchId: string) => usageIngestionWorkflowId(organisationId, ingestionShardOf(batchId, shards));

  async function recordOf(batch: UsageBatchRow): Promise<BatchRecord> {
    return {
      id: batch.id,
      status: batch.status,
      error: batch.error,
      total: batch.total,
      summary: usage.summaryOf(batch),
      ...(await usage.perEventOutcomes(batch.id)),
      createdAt: batch.created_at.toISOString(),
      completedAt: batch.completed_at?.toISOString() ?? null,
    };
  }

  /**
   * The batch as it stands, for a 202 (or, completed by then, its outcome): read from Postgres only, so the
   * answer is not held up by Temporal.
   * The batch is taken by then, and will be written once Postgres is back: with Postgres away, it is
   * answered as stored (processing), never as a 503, which would say that nothing of it counts.
   */
  async function pending(organisationId: string, stored: UsageBatchRow): Promise<IngestOutcome> {
    try {
      const batch = await recordOf(orNotFound(await usage.findBatch(organisationId, stored.id), 'Batch'));
      // Completed meanwhile (the wait ran out as the last chunk was written): its outcome, as a 200 answers it.
      if (batch.status === 'completed' && batch.summary) {
        return { state: 'done', result: { batchId: batch.id, summary: batch.summary, failedRecords: batch.failedRecords, duplicateEvents: batch.duplicateEvents } };
      }
      return { state: 'pending', batch };
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      const batch = { id: stored.id, status: 'processing' as const, error: null, total: stored.total, summary: null, failedRecords: [], duplicateEvents: [], createdAt: stored.created_at.toISOString(), completedAt: null };
      return { state: 'pending', batch };
    }
  }

  /**
   * Hands the stored batch to its organisation's ingestion workflow (started if none runs) and waits for
   * its outcome until `SUBMIT_WAIT_MS` from `started` has passed: the outcome, or `taken` when the workflow
   * took the batch but had not answered by then. Throws `unavailable` when the batch was not taken in
   * time. A run draining before it continues as new refuses the batch: it is sent again, to the next run.
   */
  async function ingestInWorkflow(organisationId: string, batch: SubmittedBatch, started: number): Promise<BatchOutcome | 'taken'> {
    const remaining = () => SUBMIT_WAIT_MS - (Date.now() - started);
    const refusedWhileDraining = (error: unknown) => error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && error.cause.type === 'draining';
    for (;;) {
      if (remaining() <= 0) throw temporalUnavailable();
      const startWorkflowOperation = workflows.withStart('usageIngestionWorkflow', {
        workflowId: ingestionOf(organisationId, batch.batchId),
        args: [{ organisationId }],
        // Every batch of the organisation goes to the run under way; the first one starts it.
        workflowIdConflictPolicy: 'USE_EXISTING',
        ...searchAttributes({ organisationId }),
      });
      let taken = false;
      try {
        const update = await temporal.bounded(() => workflows.startUpdateWithStart(submitBatchUpdate, { args: [batch], startWorkflowOperation }), remaining());
        taken = true;
        return await temporal.bounded(() => update.result(), Math.max(1, remaining()));
      } catch (error) {
        // A validator's refusal shows at the hand-over or, with the Update's outcome, at its result.
        if (refusedWhileDraining(error)) await pause(DRAINING_RETRY_MS);
        else if (taken && isUnavailable(error)) return 'taken';
        else throw error;
      }
    }
  }

  /** The same hand-over as a signal (see `submitBatchSignal`): nobody waits, and Temporal keeps it once this answers. */
  async function handOver(organisationId: string, batch: SubmittedBatch): Promise<void> {
    await temporal.bounded(() =>
      workflows.signalWithStart('usageIngestionWorkflow', {
        workflowId: ingestionOf(organisationId, batch.batchId),
        args: [{ organisationId }],
        signal: submitBatchSignal,
        signalArgs: [batch],
        ...searchAttributes({ organisationId }),
      }),
    );
  }

  /**
   * Why the organisation's ingestion workflow will not finish the batch, if it will not: its latest run
   * ended (terminated, say) after the batch was stored, or, a minute after that, its running run neither
   * queues nor writes the batch (the API stopped before handing it over).
   */
  async function lostBy(row: UsageBatchRow): Promise<string | undefined> {
    const workflowId = ingestionOf(row.organisation_id, row.id);
    const old = Date.now() - row.created_at.getTime() > ORPHAN_AFTER_MS;
    try {
      const description = await temporal.bounded(() => workflows.handle('usageIngestionWorkflow', workflowId).describe());
      const status = description.status.name;
      if (status !== 'RUNNING') {
        const endedAfter = description.closeTime && description.closeTime >= row.created_at;
        return endedAfter || old ? `the ingestion workflow ended ${status.toLowerCase().replace('_', ' ')}; send the batch again` : undefined;
      }
      if (!old) return undefined;
      const state = await temporal.bounded(() => workflows.query(workflowId, submittedBatchQuery, row.id));
      if (state === 'unknown') return 'the batch never reached ingestion; send the batch again';
      // Answered by the run but never recorded: its group gave up while Postgres was away.
      return state === 'done' ? 'ingestion gave up on the batch and could not record it; send the batch again' : undefined;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return old ? 'the batch never reached ingestion; send the batch again' : undefined;
      throw error;
    }
  }

  /** Why nothing will finish the batch, if nothing will: its own workflow's end (before group commit), or `lostBy`. */
  async function orphanedBecause(row: UsageBatchRow): Promise<string | undefined> {
    try {
      const description = await temporal.bounded(() => workflows.handle('usageBatchWorkflow', usageBatchWorkflowId(row.id)).describe());
      const closed = description.status.name;
      return closed !== 'RUNNING' && closed !== 'COMPLETED' ? `the batch workflow ended ${closed.toLowerCase().replace('_', ' ')}; send the batch again` : undefined;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return lostBy(row);
      throw error;
    }
  }

  /**
   * Read repair: a batch still `processing` that nothing will finish is marked failed. A batch of its own
   * workflow (before group commit) whose workflow closed without recording an outcome (terminated, timed
   * out, cancelled from the Temporal UI); otherwise one its organisation's ingestion workflow lost (`lostBy`).
   */
  async function repairIfOrphaned(row: UsageBatchRow): Promise<UsageBatchRow> {
    if (row.status !== 'processing') return row;
    let reason: string | undefined;
    try {
      reason = await orphanedBecause(row);
    } catch (error) {
      // Temporal away: the batch is shown as it stands.
      if (!isUnavailable(error)) throw error;
    }
    if (!reason) return row;
    await usage.failBatch(row.id, reason);
    return orNotFound(await usage.findBatch(row.organisation_id, row.id), 'Batch');
  }

  /** The events deleted, with their rollups rebuilt: the ids of those that were there. */
  async function deleteStored(organisationId: string, ids: string[]): Promise<string[]> {
    return changingEvents(organisationId, async (trx) => {
      const rows = await createUsageRepository(trx).deleteEvents(organisationId, ids);
      return { result: rows.map((row) => row.id), changed: rows.length, touched: rows };
    });
  }

  return {
    /**
     * Stores the batch (the claim check), hands it to its organisation's ingestion workflow and waits for
     * the per-event outcomes. Temporal unreachable before any event was ingested: 503, and the batch is
     * abandoned so that none of it is ingested later (the same request with its Idempotency-Key revives
     * it). Handed over but not finished within SUBMIT_WAIT_MS (a slow worker, Temporal lost mid-way):
     * `pending` with the batch id, whose outcome `GET /events/batches/{id}` tells.
     */
    async ingest(organisationId: string, events: unknown[], idempotencyKey?: string): Promise<IngestOutcome> {
      if (events.length > MAX_BATCH_EVENTS) {
        throw new AppError('payload_too_large', 'Payload too large', [
          { code: ERROR_CODES.payload_too_large, path: 'body.events', message: `at most ${MAX_BATCH_EVENTS} events per batch` },
        ]);
      }
      // The wait runs from the request's arrival, so that storing the claim check counts against it too.
      const started = Date.now();
      const storable = events.map(storableEvent);
      const key = idempotencyKey === undefined ? undefined : { idempotencyKey, fingerprint: fingerprintOf(storable) };
      const batch = await usage.createBatch(organisationId, storable, key);
      if (key && batch.events_fingerprint !== null && batch.events_fingerprint !== key.fingerprint) {
        // The key's batch may be of another route or older than the keys of every other route (24 hours):
        // a key names one batch for good, so other events under it are refused rather than answered for.
        throw AppError.conflict(`This Idempotency-Key was already used for batch ${batch.id}, of other events; use a new key for a new batch`, 'headers.idempotency-key');
      }
      const stored = usage.summaryOf(batch);
      if (stored) return { state: 'done', result: { batchId: batch.id, summary: stored, ...(await usage.perEventOutcomes(batch.id)) } };
      if (batch.status === 'abandoned') await usage.reviveBatch(batch.id);

      const submitted: SubmittedBatch = { batchId: batch.id, chunkCount: batch.chunk_count, events: batch.total };
      let answer: BatchOutcome | 'taken';
      try {
        answer = await ingestInWorkflow(organisationId, submitted, started);
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        try {
          // Not taken in time (no worker, say): handed over durably, to be ingested once a worker takes it.
          await handOver(organisationId, submitted);
        } catch (handOverError) {
          if (!isUnavailable(handOverError)) throw handOverError;
          // The submission may have reached Temporal all the same: give the batch up only if nothing is ingested yet.
          if (await usage.abandonBatch(batch.id, 'Temporal could not be reached; nothing of this batch was ingested. Send it again.')) throw handOverError;
        }
        return pending(organisationId, batch);
      }
      if (answer === 'taken') return pending(organisationId, batch);
      const { summary, failedRecords, duplicateEvents } = answer;
      let perEvent = failedRecords && duplicateEvents ? { failedRecords, duplicateEvents } : undefined;
      try {
        perEvent ??= await usage.perEventOutcomes(batch.id);
      } catch (error) {
        // Written, but its outcomes cannot be read now: the batch record tells them once Postgres is back.
        if (!isDatabaseUnavailable(error)) throw error;
        return pending(organisationId, batch);
      }
      return { state: 'done', result: { batchId: batch.id, summary, ...perEvent } };
    },

    /**
     * A single event: its failure, if any, is the response's error. Taken but not yet written (a worker
     * restarting): the batch record, answered 202 as a batch's is, since the event will still be counted.
     */
    async ingestOne(organisationId: string, event: unknown, idempotencyKey?: string): Promise<IngestOutcome> {
      const outcome = await this.ingest(organisationId, [event], idempotencyKey);
      if (outcome.state === 'pending') return outcome;
      const { result } = outcome;
      const failure = result.failedRecords[0];
      if (failure) {
        // A 404 names what it is about in its message, without a path, as every 404 does.
        if (failure.statusCode === 404) throw new AppError('not_found', failure.error, [{ code: failure.code, message: failure.error }]);
        throw new AppError('validation', failure.error, [{ code: failure.code, path: 'body', message: failure.error }]);
      }
      return outcome;
    },

    async batch(organisationId: string, id: string): Promise<BatchRecord> {
      return recordOf(await repairIfOrphaned(orNotFound(await usage.findBatch(organisationId, id), 'Batch')));
    },

    async event(organisationId: string, id: string): Promise<UsageEventRecord> {
      return toUsageEvent(orNotFound(await usage.findEvent(organisationId, id), 'Usage event'));
    },

    async listEvents(organisationId: string, filter: UsageFilter, paging: PageQuery): Promise<Page<UsageEventRecord>> {
      return usage.listEvents(organisationId, filter, paging);
    },

    async updateEvent(organisationId: string, id: string, changes: { value?: string; timestamp?: Date; metadata?: Record<string, unknown> | null }): Promise<UsageEventRecord> {
      const row = await changingEvents(organisationId, async (trx) => {
        const events = createUsageRepository(trx);
        const before = await events.findEvent(organisationId, id);
        const after = before ? await events.updateEvent(organisationId, id, changes) : undefined;
        return { result: after, changed: after ? 1 : 0, touched: before && after ? [before, after] : [] };
      });
      return toUsageEvent(orNotFound(row, 'Usage event'));
    },

    /** Ids not in the organisation are reported as not deleted. */
    async deleteEvents(organisationId: string, ids: string[]): Promise<{ deleted: string[]; notFound: string[] }> {
      const deleted = await deleteStored(organisationId, ids);
      const gone = new Set(deleted);
      return { deleted, notFound: ids.filter((id) => !gone.has(id)) };
    },

    /** The event's earlier versions, oldest first; 404 when the event never existed in the organisation. */
    async eventVersions(organisationId: string, id: string): Promise<{ items: UsageEventVersion[] }> {
      const versions = await usage.versions(organisationId, id);
      if (versions.length === 0) orNotFound(await usage.findEvent(organisationId, id), 'Usage event');
      return { items: versions };
    },

    async deleteEvent(organisationId: string, id: string): Promise<{ id: string; deleted: true }> {
      const [deleted] = await deleteStored(organisationId, [id]);
      return { id: orNotFound(deleted, 'Usage event'), deleted: true };
    },

  };
}

export type UsageService = ReturnType<typeof createUsageService>;

/**
 * What tells one batch's events from another's under the same Idempotency-Key: SHA-256 of their JSON with
 * every object's keys in order, so that the same events written with their keys in another order match.
 * Values are compared as sent: `1` and `"1"` are two requests, as they are to every other route's key.
 */
function fingerprintOf(events: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(events, (_key, value: unknown) => (value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : value))).digest('hex');
}
