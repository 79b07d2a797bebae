/** The contracts of `usageBatchWorkflow` and `usageChunkWorkflow`: inputs, results and activities. */

/** Shapes crossing the workflow boundary: small on purpose (ids and counts; events stay in Postgres). */
export interface UsageBatchInput {
  batchId: string;
  organisationId: string;
  chunkCount: number;
}

export interface UsageChunkInput {
  batchId: string;
  organisationId: string;
  chunkIndex: number;
}

export interface FailedRecord {
  index: number;
  error: string;
  code: number | string;
  statusCode: number;
}

/** An accepted event that was stored once already (earlier, or earlier in the same batch): where it is in the batch, and its id. */
export interface DuplicateEvent {
  index: number;
  eventId: string;
}

export interface UsageChunkOutcome {
  success: number;
  failed: number;
  duplicates: number;
  failedRecords: FailedRecord[];
  /** Absent from the outcomes of chunks ingested before duplicates were listed. */
  duplicateEvents?: DuplicateEvent[];
}

export interface UsageBatchSummary {
  success: number;
  failed: number;
  total: number;
  duplicates: number;
}

/** A batch's merged counts: its chunks' outcomes added up (a repeated eventId is a success stored once). */
export function summaryOfChunks(outcomes: readonly UsageChunkOutcome[]): UsageBatchSummary {
  const summary: UsageBatchSummary = { success: 0, failed: 0, total: 0, duplicates: 0 };
  for (const outcome of outcomes) {
    summary.success += outcome.success;
    summary.failed += outcome.failed;
    summary.duplicates += outcome.duplicates;
  }
  summary.total = summary.success + summary.failed;
  return summary;
}

export interface UsageActivities {
  ingestUsageChunk(input: UsageChunkInput): Promise<UsageChunkOutcome>;
  completeUsageBatch(input: { batchId: string; summary: UsageBatchSummary }): Promise<void>;
  failUsageBatch(input: { batchId: string; error: string }): Promise<void>;
}
