import { AppError, ERROR_CODES } from '../../domain/errors';
import type { AppDeps } from '../../deps';
import { usageBatchWorkflowId } from '../../../workflows/ids';
import { OrganisationIdKey } from '../../../workflows/search-attributes';
import type { FailedRecord, UsageBatchSummary } from '../../../workflows/usage-batch.types';
import { usageBatchWorkflow } from '../../../workflows/usage-batch.workflow';
import { createUsageRepository } from './usage.repository';

export const MAX_BATCH_EVENTS = 10_000;

export interface BatchResult {
  batchId: string;
  summary: UsageBatchSummary;
  failedRecords: FailedRecord[];
}

/** Every way usage enters the system goes through here: one path, one set of rules. */
export function createUsageService(deps: Pick<AppDeps, 'db' | 'temporal'>) {
  const usage = createUsageRepository(deps.db);
  const { client, taskQueue } = deps.temporal;

  return {
    usage,

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
          typedSearchAttributes: [{ key: OrganisationIdKey, value: organisationId }],
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
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
