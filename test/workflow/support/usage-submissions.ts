import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { usageIngestionWorkflowId } from '../../../workflows/shared';
import type { UsageBatchSummary } from '../../../workflows/usage-batch.types';
import { submitBatchUpdate, type BatchOutcome, type SubmittedBatch } from '../../../workflows/usage-ingestion.types';
import { usageIngestionWorkflow } from '../../../workflows/usage-ingestion.workflow';
import { TASK_QUEUE } from './environment';
import { sleep } from './fake-activities';

/** Counts that tell one batch from another: the fake group activity answers these for a batch of `events`. */
export const countsOf = (events: number): UsageBatchSummary => ({ success: events, failed: 0, total: events, duplicates: 0 });
/** The answer to a batch of `events` whose counts the fake gave without per-event outcomes. */
export const answerOf = (events: number): BatchOutcome => ({ summary: countsOf(events) });

/**
 * Submits a batch to the organisation's ingestion workflow as the API does: Update-with-start on the
 * running workflow (or a new one), sent again while a run drains before it continues as new.
 */
export async function submitBatch(env: TestWorkflowEnvironment, organisationId: string, batch: SubmittedBatch): Promise<BatchOutcome> {
  for (;;) {
    const startWorkflowOperation = new WithStartWorkflowOperation(usageIngestionWorkflow, {
      workflowId: usageIngestionWorkflowId(organisationId),
      args: [{ organisationId }],
      taskQueue: TASK_QUEUE,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    try {
      return await env.client.workflow.executeUpdateWithStart(submitBatchUpdate, { args: [batch], startWorkflowOperation });
    } catch (error) {
      if (!(error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && error.cause.type === 'draining')) throw error;
      await sleep(20);
    }
  }
}
