import { proxyActivities } from '@temporalio/workflow';
import type { RevenueActivities } from '../activities/revenue.activities';
import { BUSINESS_FAILURE_TYPES } from '../src/domain/errors';

const { syncItemRevenue } = proxyActivities<RevenueActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds', nonRetryableErrorTypes: BUSINESS_FAILURE_TYPES },
});

export const revenueSyncWorkflowId = (invoiceItemId: string) => `revenue-sync:${invoiceItemId}`;

/** POST /revenue/sync: re-derives an invoice item's revenue records. */
export async function revenueSyncWorkflow(input: { organisationId: string; invoiceItemId: string }): Promise<{ records: number }> {
  return syncItemRevenue(input);
}
