export { createEntitlementPeriodService, createEntitlementService } from './entitlements.service';
export type { EntitlementPeriodService, EntitlementService } from './entitlements.service';
export { entitlementSubscriber } from './entitlement-reactions';
