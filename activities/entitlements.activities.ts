import type { Services } from '../src/services';
import type { EntitlementPeriodActivities } from '../workflows/entitlement-period.types';

export function createEntitlementActivities(services: Services): EntitlementPeriodActivities {
  return {
    entitlementPeriodEnd: (input) => services.entitlementPeriods.periodEnd(input.entitlementId),
    announceEntitlementReset: (input) => services.entitlementPeriods.announceReset(input.entitlementId, new Date(input.periodStart)),
  };
}
