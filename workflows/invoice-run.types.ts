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
