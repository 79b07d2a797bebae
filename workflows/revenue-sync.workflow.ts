import { transitionActivities } from './shared';

/** POST /revenue/sync: re-derives an invoice item's revenue records. */
export async function revenueSyncWorkflow(input: { organisationId: string; invoiceItemId: string }): Promise<{ records: number }> {
  return transitionActivities.syncItemRevenue(input);
}
