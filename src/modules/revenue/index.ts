export { createRevenueSyncService } from './revenue-sync.service';
export { createRevenueService, syncInvoiceRevenue } from './revenue.service';
export type { RevenueService, SyncItemRevenueInput } from './revenue.service';
