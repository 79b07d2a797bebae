import { AppError, ERROR_CODES, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { searchAttributes, usageBatchWorkflowId } from '../../../workflows/shared';
import type { FailedRecord, UsageBatchSummary } from '../../../workflows/usage-batch.types';
import { usageBatchWorkflow } from '../../../workflows/usage-batch.workflow';
import { createUsageRepository, toUsageEvent, type UsageEventRecord, type UsageFilter } from './usage.repository';

export const MAX_BATCH_EVENTS = 10_000;

export interface BatchRecord {
  id: string;
  status: 'processing' | 'completed' | 'failed';
  error: string | null;
  total: number;
  summary: UsageBatchSummary | null;
  failedRecords: FailedRecord[];
  createdAt: string;
  completedAt: string | null;
}

export interface BatchResult {
  batchId: string;
  summary: UsageBatchSummary;
  failedRecords: FailedRecord[];
}

/** Every way usage enters the system goes through here: one path, one set of rules. */
export function createUsageService(deps: WorkflowServiceDeps) {
  const usage = createUsageRepository(deps.db);
  const { client, taskQueue } = deps.temporal;

  return {
    async ingest(organisationId: string, events: unknown[], idempotencyKey?: string): Promise<BatchResult> {
      if (events.length > MAX_BATCH_EVENTS) {
        throw new AppError('payload_too_large', 'Payload too large', [
          { code: ERROR_CODES.payload_too_large, path: 'body.events', message: `at most ${MAX_BATCH_EVENTS} events per batch` },
        ]);
      }
      const batch = await usage.createBatch(organisationId, events, idempotencyKey);
      const summary =
        usage.summaryOf(batch) ??
        (await client.workflow.execute(usageBatchWorkflow, {
          workflowId: usageBatchWorkflowId(batch.id),
          taskQueue,
          args: [{ batchId: batch.id, organisationId, chunkCount: batch.chunk_count }],
          ...searchAttributes({ organisationId }),
          // A retried request joins the run already under way instead of failing or starting another.
          workflowIdConflictPolicy: 'USE_EXISTING',
        }));
      return { batchId: batch.id, summary, failedRecords: await usage.failedRecords(batch.id) };
    },

    /** A single event: its failure, if any, is the response's error. */
    async ingestOne(organisationId: string, event: unknown): Promise<BatchResult> {
      const result = await this.ingest(organisationId, [event]);
      const failure = result.failedRecords[0];
      if (failure) {
        const kind = failure.statusCode === 404 ? 'not_found' : 'validation';
        throw new AppError(kind, failure.error, [{ code: failure.code, path: 'body', message: failure.error }]);
      }
      return result;
    },

    async batch(organisationId: string, id: string): Promise<BatchRecord> {
      const batch = orNotFound(await usage.findBatch(organisationId, id), 'Batch');
      return {
        id: batch.id,
        status: batch.status,
        error: batch.error,
        total: batch.total,
        summary: usage.summaryOf(batch),
        failedRecords: await usage.failedRecords(batch.id),
        createdAt: batch.created_at.toISOString(),
        completedAt: batch.completed_at?.toISOString() ?? null,
      };
    },

    async event(organisationId: string, id: string): Promise<UsageEventRecord> {
      return toUsageEvent(orNotFound(await usage.findEvent(organisationId, id), 'Usage event'));
    },

    async listEvents(organisationId: string, filter: UsageFilter, paging: PageQuery): Promise<Page<UsageEventRecord>> {
      return usage.listEvents(organisationId, filter, paging);
    },

    async updateEvent(organisationId: string, id: string, changes: { value?: string; timestamp?: Date; metadata?: Record<string, unknown> | null }): Promise<UsageEventRecord> {
      return toUsageEvent(orNotFound(await usage.updateEvent(organisationId, id, changes), 'Usage event'));
    },

    /** Ids not in the organisation are reported as not deleted. */
    async deleteEvents(organisationId: string, ids: string[]): Promise<{ deleted: string[]; notFound: string[] }> {
      const deleted = await usage.deleteEvents(organisationId, ids);
      const gone = new Set(deleted);
      return { deleted, notFound: ids.filter((id) => !gone.has(id)) };
    },

    async deleteEvent(organisationId: string, id: string): Promise<{ id: string; deleted: true }> {
      const [deleted] = await usage.deleteEvents(organisationId, [id]);
      return { id: orNotFound(deleted, 'Usage event'), deleted: true };
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
