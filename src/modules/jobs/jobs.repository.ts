import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { Job, JobStatus } from './jobs.schemas';

export interface JobRow {
  id: string;
  organisation_id: string;
  type: string;
  status: JobStatus;
  done: string;
  total: string | null;
  params: unknown;
  result: unknown;
  error: string | null;
  workflow_id: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export function toJob(row: JobRow): Job {
  return {
    id: row.id,
    type: row.type,
    status: row.status,
    progress: { done: Number(row.done), total: row.total === null ? null : Number(row.total) },
    result: row.result ?? null,
    error: row.error,
    workflowId: row.workflow_id,
    completedAt: row.completed_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Jobs record long work: created by the API, advanced by the workflow (or the integrator) that owns them. */
export function createJobRepository(db: Knex) {
  const scoped = (organisationId: string, id: string) => db('jobs').where({ organisation_id: organisationId, id });
  return {
    async create(job: { organisationId: string; type: string; total?: number | null; params?: unknown; workflowId?: string | null; createdBy?: string; id?: string }): Promise<JobRow> {
      const [row] = await db('jobs')
        .insert({
          id: job.id ?? newId('job'),
          organisation_id: job.organisationId,
          type: job.type,
          total: job.total ?? null,
          params: job.params === undefined ? null : JSON.stringify(job.params),
          workflow_id: job.workflowId ?? null,
          created_by: job.createdBy ?? null,
        })
        .returning<JobRow[]>('*');
      return row!;
    },
    async find(organisationId: string, id: string): Promise<JobRow | undefined> {
      return scoped(organisationId, id).first<JobRow | undefined>();
    },
    async list(organisationId: string, filter: { type?: string; status?: JobStatus }, paging: PageQuery): Promise<Page<Job>> {
      const query = db('jobs').where({ organisation_id: organisationId }).select('*');
      if (filter.type) query.where({ type: filter.type });
      if (filter.status) query.where({ status: filter.status });
      return paginate<JobRow, Job>(query, paging, { searchColumns: ['type'], map: toJob });
    },
    async update(organisationId: string, id: string, changes: { status?: JobStatus; done?: number; total?: number | null; result?: unknown; error?: string | null }): Promise<JobRow | undefined> {
      const final = changes.status === 'completed' || changes.status === 'failed' || changes.status === 'cancelled';
      const [row] = await scoped(organisationId, id)
        .update({
          ...(changes.status ? { status: changes.status } : {}),
          ...(changes.done !== undefined ? { done: changes.done } : {}),
          ...(changes.total !== undefined ? { total: changes.total } : {}),
          ...(changes.result !== undefined ? { result: JSON.stringify(changes.result) } : {}),
          ...(changes.error !== undefined ? { error: changes.error } : {}),
          ...(final ? { completed_at: db.fn.now() } : {}),
          updated_at: db.fn.now(),
        })
        .returning<JobRow[]>('*');
      return row;
    },
    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await scoped(organisationId, id).delete()) > 0;
    },
  };
}
