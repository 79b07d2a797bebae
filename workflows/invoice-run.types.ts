/** The contract of `invoiceRunWorkflow`: its input and its activities. */

/**
 * An invoice run bills, for one billing date, every contract plan of the organisation that has something
 * due (or the contracts named). Started by `POST /invoice-runs` or by an invoice-run Schedule.
 */
export interface InvoiceRunInput {
  organisationId: string;
  /** The run's id (`invoice_runs.id`); absent when a Schedule starts the run, which then records itself. */
  runId?: string;
  /** `YYYY-MM-DD`. Absent when a Schedule starts the run: the scheduled time's date in `timezone`. */
  billingDate?: string;
  /** IANA zone of the Schedule that started the run, for its billing date. */
  timezone?: string;
  /** The Schedule that started the run, if any. */
  scheduleId?: string;
  contractIds?: string[];
  dryRun?: boolean;
}


/**
 * What the run's first activity answers, as the workflow reads it from its history: a run begun before its
 * pages were id ranges recorded the contracts themselves instead, and no paging or auto-advance flag.
 */
export interface BegunRun {
  runId: string;
  pages?: Array<{ from: string; to: string }>;
  pagesInFlight?: number;
  autoAdvance?: boolean;
  contractIds?: string[];
}

/** What the run's first activity is asked: the run to record (or the one a Schedule started). */
export interface BeginRunInput {
  organisationId: string;
  runId?: string;
  workflowId: string;
  billingDate: string;
  dryRun: boolean;
  contractIds?: string[];
  scheduleId?: string;
}

/** A page of contracts to bill: a range of ids (listed when the page runs), or the ids themselves (older runs). */
export interface BillContractsInput {
  organisationId: string;
  runId: string;
  billingDate: string;
  dryRun: boolean;
  range?: { from: string; to: string };
  contractIds?: string[];
}

export interface InvoiceRunActivities {
  /** Records the run; says too whether the organisation auto-advances its drafts. */
  beginInvoiceRun(input: BeginRunInput): Promise<BegunRun>;
  /** A page of contracts, billed together in one transaction; a retry skips those already billed. */
  billContracts(input: BillContractsInput): Promise<{ billed: number; failed: number }>;
  finishInvoiceRun(input: { runId: string; failed?: boolean }): Promise<void>;
  /** Each draft the run made raised (and sent) through its own invoice workflow's Updates. */
  advanceRunInvoices(input: { organisationId: string; runId: string }): Promise<{ advanced: number }>;
}
