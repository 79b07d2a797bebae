import type { WorkflowServiceDeps } from '../../temporal/client';
import { orNotFound } from '../../domain/errors';
import { invoicesIn } from '../invoices';
import { revenueSyncWorkflowId, searchAttributes } from '../../../workflows/ids';

/** POST /revenue/sync runs as a workflow: one per item at a time, so concurrent requests share one run. */
export function createRevenueSyncService(deps: Pick<WorkflowServiceDeps, 'db' | 'temporal'>) {
  const { workflows } = deps.temporal;
  return {
    async syncItem(organisationId: string, invoiceItemId: string): Promise<{ invoiceItemId: string; records: number }> {
      // An item the organisation does not have is the caller's mistake (404), not a workflow that failed.
      orNotFound(await invoicesIn(deps.db).findItem(organisationId, invoiceItemId), 'Invoice item');
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
