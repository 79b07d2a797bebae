import { newId } from '../../db/ids';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { exportWorkflowId, searchAttributes } from '../../../workflows/ids';
import { jobsIn, toJob, type Job } from '../jobs';
import { objectNamed } from './object-registry';
import type { ObjectQuery } from './object-sql';
import { createObjectRepository } from './objects.repository';

/** Starts exports: each one a job run by its workflow. */
export function createExportService(deps: WorkflowServiceDeps) {
  const objects = createObjectRepository(deps.db);
  const jobs = jobsIn(deps.db);

  return {
    async start(organisationId: string, createdBy: string, body: { object: string; filter: NonNullable<ObjectQuery['filter']>; format: 'csv' }): Promise<Job> {
      // Validate the query now, so a bad field answers 400 instead of failing the job later.
      objects.check(objectNamed(body.object)!, organisationId, body);
      const jobId = newId('job');
      const workflowId = exportWorkflowId(jobId);
      const job = await jobs.create({ id: jobId, organisationId, type: 'export', params: body, workflowId, createdBy });
      try {
        await deps.temporal.bounded(() =>
          deps.temporal.workflows.start('exportWorkflow', {
            workflowId,
            args: [{ jobId, organisationId, object: body.object, query: { filter: body.filter } }],
            ...searchAttributes({ organisationId }),
          }),
        );
      } catch (error) {
        // No job without the workflow that runs it: the caller gets the error and nothing is left queued.
        await jobs.delete(organisationId, jobId);
        throw error;
      }
      return toJob(job);
    },
  };
}

export type ExportService = ReturnType<typeof createExportService>;
