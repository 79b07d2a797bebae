/**
 * The contracts of `usageIngestionWorkflow` (one per organisation, fed batches by Update-with-start) and
 * `usageGroupWorkflow` (the child that ingests the batches that arrived together): inputs, results,
 * Updates, Queries and activities.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ErrorItem, ErrorKind } from '../src/domain/errors';
import type { DuplicateEvent, FailedRecord, UsageBatchSummary } from './usage-batch.types';

/** A stored batch handed to ingestion: its id, how many chunks its claim check holds and how many events. */
export interface SubmittedBatch {
  batchId: string;
  chunkCount: number;
  events: number;
}

export interface UsageIngestionInput {
  organisationId: string;
  /** Batches a run handed on when it continued as new (signalled ones nobody waits for). */
  queued?: SubmittedBatch[];
}

/** The batches of one group: ingested by one child workflow, in one local activity. */
export interface UsageGroupInput {
  organisationId: string;
  batches: SubmittedBatch[];
}

/** Why a batch of a group was refused, as the error model carries it (an `AppError` of a business kind). */
export interface BatchRefusal {
  kind: ErrorKind;
  message: string;
  items: ErrorItem[];
}

/**
 * What a batch's Update answers: its merged counts and, when the group's budget (`INLINE_OUTCOMES`) allows,
 * its per-event outcomes, each by index; without them, the API reads them from the chunks in Postgres.
 */
export interface BatchOutcome {
  summary: UsageBatchSummary;
  failedRecords?: FailedRecord[];
  duplicateEvents?: DuplicateEvent[];
}

/** Per-event outcomes (failed records and duplicates) a group's result carries at most, over all its batches. */
export const INLINE_OUTCOMES = 1_000;

/** One batch's end: its outcome, or the refusal that marked it failed. */
export type BatchVerdict = ({ batchId: string } & BatchOutcome) | { batchId: string; refusal: BatchRefusal };

export interface UsageGroupOutcome {
  verdicts: BatchVerdict[];
}

/** Where a batch stands in its organisation's ingestion workflow (this run of it). */
export type SubmittedBatchState = 'queued' | 'ingesting' | 'done' | 'unknown';

/** A stored batch to ingest: answers its outcome once its group is written, or fails with its refusal. */
export const submitBatchUpdate = defineUpdate<BatchOutcome, [SubmittedBatch]>('submitBatch');
/**
 * The same hand-over with nobody waiting, durable once sent: what the API sends when the workflow did not
 * take a batch in time (no worker running), so that the batch is ingested once one is back.
 */
export const submitBatchSignal = defineSignal<[SubmittedBatch]>('submitBatch');
/** Where a batch stands: `unknown` to a run that never saw it (or saw it before it continued as new). */
export const submittedBatchQuery = defineQuery<SubmittedBatchState, [string]>('submittedBatch');

/** The refusal a submission meets while the run drains before it continues as new: send it again. */
export const DRAINING = 'usage ingestion is continuing as new; submit the batch again';

export interface UsageGroupActivities {
  /** Ingests every chunk of the group's batches and completes each batch; a batch refused is marked failed. */
  ingestUsageGroup(input: UsageGroupInput): Promise<UsageGroupOutcome>;
  /** Marks each batch failed with the reason (a group that gave up); a completed one is left as it is. */
  failUsageBatches(input: { batchIds: string[]; error: string }): Promise<void>;
}
