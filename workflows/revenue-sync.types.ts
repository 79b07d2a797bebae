/** The contract of `revenueSyncWorkflow`: its input, its result and its activity. */

export interface RevenueSyncInput {
  organisationId: string;
  invoiceItemId: string;
}

export interface RevenueActivities {
  /** Re-derives an invoice item's revenue records. */
  syncItemRevenue(input: RevenueSyncInput): Promise<{ records: number }>;
}
