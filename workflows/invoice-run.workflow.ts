import { workflowInfo } from '@temporalio/workflow';
import type { InvoiceRunInput } from './invoice-run.types';
import { billingActivities, bookkeepingActivities } from './shared';

/** Contracts per activity: a few hundred activities for ten thousand contracts keep the history small. */
const PAGE = 25;
/** Pages billed at the same time. */
const PARALLEL_PAGES = 4;

/** A day `YYYY-MM-DD` in an IANA zone. */
function dayIn(instant: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(instant);
  const part = (type: string) => parts.find((p) => p.type === type)!.value;
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/** The billing date of a run a Schedule started: the scheduled time's day in the schedule's zone. */
function scheduledBillingDate(timeZone: string): string {
  const scheduled = workflowInfo().typedSearchAttributes.getAll().find((pair) => pair.key.name === 'TemporalScheduledStartTime')?.value;
  return dayIn(scheduled instanceof Date ? scheduled : workflowInfo().startTime, timeZone);
}

/**
 * An invoice run: records itself, then bills its contracts a page at a time, a few pages at once. A
 * contract that cannot be billed fails alone, with its reason, in the run's record; a crash anywhere
 * resumes where it stopped, since every contract's invoices and outcome commit together and every
 * period billed is claimed once in Postgres.
 */
export async function invoiceRunWorkflow(input: InvoiceRunInput): Promise<void> {
  const billingDate = input.billingDate ?? scheduledBillingDate(input.timezone ?? 'UTC');
  const dryRun = input.dryRun ?? false;
  const { runId, contractIds } = await bookkeepingActivities.beginInvoiceRun({
    organisationId: input.organisationId,
    runId: input.runId,
    workflowId: workflowInfo().workflowId,
    billingDate,
    dryRun,
    contractIds: input.contractIds,
    scheduleId: input.scheduleId,
  });
  const pages: string[][] = [];
  for (let i = 0; i < contractIds.length; i += PAGE) pages.push(contractIds.slice(i, i + PAGE));
  try {
    for (let i = 0; i < pages.length; i += PARALLEL_PAGES) {
      await Promise.all(
        pages.slice(i, i + PARALLEL_PAGES).map((page) => billingActivities.billContracts({ organisationId: input.organisationId, runId, contractIds: page, billingDate, dryRun })),
      );
    }
    // Auto-advance, when the organisation has it on: each draft raised (and sent) by its own workflow.
    if (!dryRun) await billingActivities.advanceRunInvoices({ organisationId: input.organisationId, runId });
  } catch (error) {
    await bookkeepingActivities.finishInvoiceRun({ runId, failed: true });
    throw error;
  }
  await bookkeepingActivities.finishInvoiceRun({ runId });
}
