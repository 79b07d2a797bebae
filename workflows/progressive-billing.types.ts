import { defineSignal } from '@temporalio/workflow';

/** The contract of `progressiveBillingWorkflow`: its input, its signal and its activities. */

/** The contract whose usage may have crossed a progressive billing threshold. */
export interface ProgressiveBillingInput {
  organisationId: string;
  contractId: string;
  /** Checks made by earlier runs of the same workflow (continued as new). */
  checks?: number;
}

/** More usage arrived while the workflow was running: check again once the current check ends. */
export const recheckSignal = defineSignal('recheck');

/** What a check billed: the drafts it made (none when no new threshold was crossed) and the thresholds they claim. */
export interface ProgressiveBillingOutcome {
  invoiceIds: string[];
  thresholds: string[];
  periodStart: string | null;
}

export interface ProgressiveBillingActivities {
  /** The check and its invoice, in one transaction under the contract's row lock; thresholds claimed once per period. */
  billProgressiveThresholds(input: ProgressiveBillingInput): Promise<ProgressiveBillingOutcome>;
  /** With the organisation's auto-advance on, each draft raised (and sent) through its own invoice workflow. */
  advanceProgressiveInvoices(input: { organisationId: string; invoiceIds: string[] }): Promise<{ advanced: number }>;
}
