import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { FileStorage, StoredFile } from '../../storage/file-storage';
import { exportKey } from './export-files';
import { createJobRepository, toJob, type JobRow } from './jobs.repository';
import type { Job, JobStatus } from './jobs.schemas';

/** The statuses a job ends in. */
const FINAL_STATUSES = new Set<string>(['completed', 'failed', 'cancelled']);

export type JobChanges = Parameters<ReturnType<typeof createJobRepository>['update']>[2];

export function createJobService(deps: { db: Knex; exports: FileStorage }) {
  const jobs = createJobRepository(deps.db);

  async function row(organisationId: string, id: string): Promise<JobRow> {
    return orNotFound(await jobs.find(organisationId, id), 'Job');
  }

  return {
    row,

    async create(organisationId: string, job: { type: string; total?: number; createdBy?: string }): Promise<Job> {
      return toJob(await jobs.create({ organisationId, ...job }));
    },

    async list(organisationId: string, filter: { type?: string; status?: JobStatus }, paging: PageQuery): Promise<Page<Job>> {
      return jobs.list(organisationId, filter, paging);
    },

    async get(organisationId: string, id: string): Promise<Job> {
      return toJob(await row(organisationId, id));
    },

    /** Progress on a job of the caller's own: a job run by a workflow reports its own. */
    async report(organisationId: string, id: string, changes: JobChanges): Promise<Job> {
      const job = await row(organisationId, id);
      if (job.workflow_id) throw AppError.conflict('This job is run by a workflow; it reports its own progress');
      // A job that ended stays ended; its progress never passes its total.
      if (FINAL_STATUSES.has(job.status) && changes.status !== undefined && changes.status !== job.status) {
        throw AppError.conflict(`The job is ${job.status}; a job that ended does not change its status`);
      }
      const done = changes.done ?? Number(job.done);
      const total = changes.total === undefined ? (job.total === null ? null : Number(job.total)) : changes.total;
      if (total !== null && done > total) throw AppError.validation(`done (${done}) must not pass total (${total})`, changes.done !== undefined ? 'body.done' : 'body.total');
      return toJob(orNotFound(await jobs.update(organisationId, id, changes), 'Job'));
    },

    /** A workflow's job ends: completed with its result, or failed with its error. */
    async finish(input: { organisationId: string; jobId: string; result?: unknown; error?: string }): Promise<void> {
      await jobs.update(input.organisationId, input.jobId, input.error ? { status: 'failed', error: input.error } : { status: 'completed', result: input.result });
    },

    /** The CSV of a completed export, from whichever process wrote it. */
    async exportFileOf(organisationId: string, id: string): Promise<StoredFile> {
      const job = await row(organisationId, id);
      if (job.type !== 'export') throw AppError.notFound('Job file');
      if (job.status !== 'completed') throw AppError.conflict(`the export is ${job.status}`);
      // A job of type export recorded by a client through POST /jobs has no file.
      return orNotFound(await deps.exports.open(exportKey(organisationId, job.id)), 'Job file');
    },
  };
}

export type JobService = ReturnType<typeof createJobService>;
