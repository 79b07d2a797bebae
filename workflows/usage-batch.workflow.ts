import { executeChild, proxyActivities } from '@temporalio/workflow';
import type { UsageActivities } from '../activities/usage.activities';
import { usageChunkWorkflowId } from './ids';
import { OrganisationIdKey } from './search-attributes';
import type { UsageBatchInput, UsageBatchSummary, UsageChunkInput, UsageChunkOutcome } from './usage-batch.types';
import { BUSINESS_FAILURE_TYPES } from '../src/domain/errors';

/**
 * Writes to Postgres, retried with backoff until the database answers. The heartbeat timeout notices a
 * dead worker in seconds; retries are safe because each chunk stores its outcome with its events.
 */
const { ingestUsageChunk, completeUsageBatch } = proxyActivities<UsageActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: BUSINESS_FAILURE_TYPES },
});

/** One chunk of at most 1,000 events: checks, deduplicates and writes them, returns their outcomes. */
export async function usageChunkWorkflow(input: UsageChunkInput): Promise<UsageChunkOutcome> {
  return ingestUsageChunk(input);
}

/** A batch: one child per chunk, run side by side, their outcomes merged into the summary. */
export async function usageBatchWorkflow(input: UsageBatchInput): Promise<UsageBatchSummary> {
  const outcomes = await Promise.all(
    Array.from({ length: input.chunkCount }, (_, chunkIndex) =>
      executeChild(usageChunkWorkflow, {
        workflowId: usageChunkWorkflowId(input.batchId, chunkIndex),
        args: [{ batchId: input.batchId, organisationId: input.organisationId, chunkIndex }],
        typedSearchAttributes: [{ key: OrganisationIdKey, value: input.organisationId }],
      }),
    ),
  );
  const summary: UsageBatchSummary = { success: 0, failed: 0, total: 0, duplicates: 0 };
  for (const outcome of outcomes) {
    summary.success += outcome.success;
    summary.failed += outcome.failed;
    summary.duplicates += outcome.duplicates;
  }
  summary.total = summary.success + summary.failed;
  await completeUsageBatch({ batchId: input.batchId, summary });
  return summary;
}
