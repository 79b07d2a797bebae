/** The contract of `usageEventStorageWorkflow`: its result and activities. */

export interface UsagePartitionsOutcome {
  /** The months whose partition was made, as `2026-11`. */
  created: string[];
  /** Events moved out of the default partition into their month's. */
  moved: number;
}

export interface UsageRetentionOutcome {
  organisationId: string;
  deleted: { month: string; events: number }[];
  held: { month: string; reason: 'unpaid-invoice' | 'unbilled-usage' }[];
}

export interface UsageEventStorageActivities {
  /** The current month's partition and the next three, and one for each month the default partition holds. */
  maintainUsagePartitions(): Promise<UsagePartitionsOutcome>;
  /** Each organisation's expired months deleted, unless billed but unpaid or not billed yet. */
  applyUsageRetention(): Promise<UsageRetentionOutcome[]>;
}
