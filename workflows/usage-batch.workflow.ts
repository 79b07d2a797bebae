import { executeChild } from '@temporalio/workflow';
import { bookkeepingActivities, ingestionActivities, searchAttributes, usageChunkWorkflowId } from './shared';
import type { UsageBatchInput, UsageBatchSummary, UsageChunkInput, UsageChunkOutcome } from './usage-batch.types';

/** One chunk of at most 1,000 events: checks, deduplicates and writes them, returns their outcomes. */
export async function usageChunkWorkflow(input: UsageChunkInput): Promise<UsageChunkOutcome> {
  return ingestionActivities.ingestUsageChunk(input);
}

/** A batch: one child per chunk, run side by side, their outcomes merged into the summary. */
export async function usageBatchWorkflow(input: UsageBatchInput): Promise<UsageBatchSummary> {
  const outcomes = await Promise.all(
    Array.from({ length: input.chunkCount }, (_, chunkIndex) =>
      executeChild(usageChunkWorkflow, {
        workflowId: usageChunkWorkflowId(input.batchId, chunkIndex),
        args: [{ batchId: input.batchId, organisationId: input.organisationId, chunkIndex }],
        ...searchAttributes({ organisationId: input.organisationId }),
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
  await bookkeepingActivities.completeUsageBatch({ batchId: input.batchId, summary });
  return summary;
}
