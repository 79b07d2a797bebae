import type { RevenueActivities, RevenueSyncInput } from './revenue-sync.types';
import { activitiesOf } from './shared';

const transitionActivities = activitiesOf<RevenueActivities>('transition');

/** POST /revenue/sync: re-derives an invoice item's revenue records. */
export async function revenueSyncWorkflow(input: RevenueSyncInput): Promise<{ records: number }> {
  return transitionActivities.syncItemRevenue(input);
}
