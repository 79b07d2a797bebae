import { WorkflowNotFoundError } from '@temporalio/client';
import type { FileStorage } from '../../storage/file-storage';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { exportKey } from './export-files';
import { createJobRepository } from './jobs.repository';
import type { JobService } from './jobs.service';

/** What the API does to a job's workflow. */
export function createJobControlService(deps: WorkflowServiceDeps & { exports: FileStorage; jobs: JobService }) {
  const jobs = createJobRepository(deps.db);
  const jobService = deps.jobs;

  return {
    /** A job still running in a workflow is cancelled first; an export's file goes with its job. */
    async delete(organisationId: string, id: string): Promise<void> {
      const job = await jobService.row(organisationId, id);
      if (job.workflow_id && (job.status === 'queued' || job.status === 'running')) {
        try {
          await deps.temporal.client.workflow.getHandle(job.workflow_id).cancel();
        } catch (error) {
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        }
      }
      await jobs.delete(organisationId, id);
      if (job.type === 'export') await deps.exports.remove(exportKey(organisationId, job.id));
    },
  };
}

export type JobControlService = ReturnType<typeof createJobControlService>;
