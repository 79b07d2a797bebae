import type { TemporalHandle } from '../../temporal/client';
import { revenueSyncWorkflowId, searchAttributes } from '../../../workflows/ids';

/** POST /revenue/sync runs as a workflow: one per item at a time, so concurrent requests share one run. */
export function createRevenueSyncService(deps: { temporal: TemporalHandle }) {
  const { workflows } = deps.temporal;
  return {
    async syncItem(organisationId: string, invoiceItemId: string): Promise<{ invoiceItemId: string; records: number }> {
      const { records } = await deps.temporal.bounded(() =>
        workflows.execute('revenueSyncWorkflow', {
          workflowId: revenueSyncWorkflowId(organisationId, invoiceItemId),
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
