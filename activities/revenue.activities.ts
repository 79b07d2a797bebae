import type { SyncItemRevenueInput } from '../src/modules/revenue';
import type { Services } from '../src/services';

export function createRevenueActivities(services: Services) {
  return {
    syncItemRevenue: (input: SyncItemRevenueInput) => services.revenue.syncItem(input),
  };
}

export type RevenueActivities = ReturnType<typeof createRevenueActivities>;
