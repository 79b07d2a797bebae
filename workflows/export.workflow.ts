import { ApplicationFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { ExportActivities, ExportInput } from '../activities/export.activities';
import { BUSINESS_FAILURE_TYPES } from '../src/domain/errors';

export const exportWorkflowId = (jobId: string) => `export:${jobId}`;

const { exportObjects } = proxyActivities<ExportActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10, nonRetryableErrorTypes: BUSINESS_FAILURE_TYPES },
});
const { finishJob } = proxyActivities<ExportActivities>({ startToCloseTimeout: '30 seconds' });

/** POST /objects/export: a CSV written as a job, whose progress the job shows while it runs. */
export async function exportWorkflow(input: ExportInput): Promise<{ rows: number; bytes: number }> {
  try {
    const { rows, bytes } = await exportObjects(input);
    await finishJob({ organisationId: input.organisationId, jobId: input.jobId, result: { rows, bytes, downloadUrl: `/jobs/${input.jobId}/file` } });
    return { rows, bytes };
  } catch (error) {
    // A cancelled export's job was deleted by the caller: there is nothing left to report to.
    if (isCancellation(error)) throw error;
    const message = error instanceof ApplicationFailure || error instanceof Error ? error.message : String(error);
    await finishJob({ organisationId: input.organisationId, jobId: input.jobId, error: message });
    throw error;
  }
}
