import type { Services } from '../src/services';
import type { RevenueActivities } from '../workflows/revenue-sync.types';

export function createRevenueActivities(services: Services): RevenueActivities {
  return {
    syncItemRevenue: (input) => services.revenue.syncItem(input),
  };
}
