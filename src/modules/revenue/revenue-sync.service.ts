import type { TemporalHandle } from '../../temporal/client';
import { revenueSyncWorkflow } from '../../../workflows/revenue-sync.workflow';
import { revenueSyncWorkflowId, searchAttributes } from '../../../workflows/shared';

/** POST /revenue/sync runs as a workflow: one per item at a time, so concurrent requests share one run. */
export function createRevenueSyncService(deps: { temporal: TemporalHandle }) {
  const { client, taskQueue } = deps.temporal;
  return {
    async syncItem(organisationId: string, invoiceItemId: string): Promise<{ invoiceItemId: string; records: number }> {
      const { records } = await deps.temporal.bounded(() =>
        client.workflow.execute(revenueSyncWorkflow, {
          workflowId: revenueSyncWorkflowId(invoiceItemId),
          taskQueue,
          args: [{ organisationId, invoiceItemId }],
          ...searchAttributes({ organisationId }),
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
        'update',
      );
      return { invoiceItemId, records };
    },
  };
}
