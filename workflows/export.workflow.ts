import { ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { ExportActivities, ExportInput, ExportResult } from './export.types';
import { activitiesOf } from './shared';

const longExportActivities = activitiesOf<Pick<ExportActivities, 'exportObjects'>>('longExport');
const bookkeepingActivities = activitiesOf<Pick<ExportActivities, 'finishJob'>>('bookkeeping');


/** POST /objects/export: a CSV written as a job, whose progress the job shows while it runs. */
export async function exportWorkflow(input: ExportInput): Promise<ExportResult> {
  const { finishJob } = bookkeepingActivities;
  try {
    const { rows, bytes } = await longExportActivities.exportObjects(input);
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
