import { executeChild, patched } from '@temporalio/workflow';
import { activitiesOf, failureReason, localActivitiesOf, searchAttributes, usageChunkWorkflowId } from './shared';
import { summaryOfChunks, type UsageActivities, type UsageBatchInput, type UsageBatchSummary, type UsageChunkInput, type UsageChunkOutcome } from './usage-batch.types';

const ingestionActivities = activitiesOf<Pick<UsageActivities, 'ingestUsageChunk'>>('ingestion');
const ingestionLocalActivities = localActivitiesOf<Pick<UsageActivities, 'ingestUsageChunk'>>('ingestion');
const bookkeepingActivities = activitiesOf<Pick<UsageActivities, 'completeUsageBatch' | 'failUsageBatch'>>('bookkeeping');
const bookkeepingLocalActivities = localActivitiesOf<Pick<UsageActivities, 'completeUsageBatch'>>('bookkeeping');

/**
 * Since this patch a chunk's write and a batch's summary run as local activities: a one-chunk batch takes
 * four workflow tasks instead of seven. Batches started before it replay with regular activities.
 */
export const LOCAL_INGESTION_PATCH = 'usage-chunks-run-as-local-activities';

/** One chunk of at most 1,000 events: checks, deduplicates and writes them, returns their outcomes. */
export async function usageChunkWorkflow(input: UsageChunkInput): Promise<UsageChunkOutcome> {
  if (patched(LOCAL_INGESTION_PATCH)) return ingestionLocalActivities.ingestUsageChunk(input);
  return ingestionActivities.ingestUsageChunk(input);
}

/**
 * A batch: one child per chunk, run side by side, their outcomes merged into the summary. A chunk that
 * gives up marks the batch failed, with the reason, rather than leaving it `processing`; the chunks that
 * got through keep their events, and posting the batch again retries only what is missing.
 */
export async function usageBatchWorkflow(input: UsageBatchInput): Promise<UsageBatchSummary> {
  let outcomes: UsageChunkOutcome[];
  try {
    outcomes = await Promise.all(
      Array.from({ length: input.chunkCount }, (_, chunkIndex) =>
        executeChild(usageChunkWorkflow, {
          workflowId: usageChunkWorkflowId(input.batchId, chunkIndex),
          args: [{ batchId: input.batchId, organisationId: input.organisationId, chunkIndex }],
          ...searchAttributes({ organisationId: input.organisationId }, 'usageChunkWorkflow'),
        }),
      ),
    );
  } catch (error) {
    await bookkeepingActivities.failUsageBatch({ batchId: input.batchId, error: failureReason(error) });
    throw error;
  }
  const summary = summaryOfChunks(outcomes);
  await (patched(LOCAL_INGESTION_PATCH) ? bookkeepingLocalActivities : bookkeepingActivities).completeUsageBatch({ batchId: input.batchId, summary });
  return summary;
}
