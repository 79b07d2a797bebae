import { patched, workflowInfo } from '@temporalio/workflow';
import type { BegunRun, InvoiceRunActivities, InvoiceRunInput } from './invoice-run.types';
import { activitiesOf } from './shared';

const billingActivities = activitiesOf<Pick<InvoiceRunActivities, 'billContracts' | 'advanceRunInvoices'>>('billing');
const bookkeepingActivities = activitiesOf<Pick<InvoiceRunActivities, 'beginInvoiceRun' | 'finishInvoiceRun'>>('bookkeeping');

/**
 * Runs started before pages were billed set-based split their contracts in pages of 25, four pages at a
 * time in groups; they replay that way.
 */
export const SET_BASED_PAGES_PATCH = 'invoice-run-set-based-pages';
const LEGACY_PAGE = 25;
const LEGACY_PARALLEL_PAGES = 4;

function split<T>(all: T[], size: number): T[][] {
  const pages: T[][] = [];
  for (let i = 0; i < all.length; i += size) pages.push(all.slice(i, i + size));
  return pages;
}

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
  const begun: BegunRun = await bookkeepingActivities.beginInvoiceRun({
    organisationId: input.organisationId,
    runId: input.runId,
    workflowId: workflowInfo().workflowId,
    billingDate,
    dryRun,
    contractIds: input.contractIds,
    scheduleId: input.scheduleId,
  });
  const { runId } = begun;
  const page = { organisationId: input.organisationId, runId, billingDate, dryRun };
  try {
    if (patched(SET_BASED_PAGES_PATCH)) {
      // A fixed number of pages in flight: the next page starts as soon as any one finishes.
      const pages = begun.pages ?? [];
      let next = 0;
      const lane = async () => {
        while (next < pages.length) await billingActivities.billContracts({ ...page, range: pages[next++]! });
      };
      await Promise.all(Array.from({ length: begun.pagesInFlight ?? 1 }, lane));
    } else {
      const pages = split(begun.contractIds ?? [], LEGACY_PAGE);
      for (let i = 0; i < pages.length; i += LEGACY_PARALLEL_PAGES) {
        await Promise.all(pages.slice(i, i + LEGACY_PARALLEL_PAGES).map((contractIds) => billingActivities.billContracts({ ...page, contractIds })));
      }
    }
    // Auto-advance, when the organisation has it on: each draft raised (and sent) by its own workflow.
    // Runs from before the set-based pages asked the activity even when the setting was off.
    if (!dryRun && (begun.autoAdvance || !patched(SET_BASED_PAGES_PATCH))) await billingActivities.advanceRunInvoices({ organisationId: input.organisationId, runId });
  } catch (error) {
    await bookkeepingActivities.finishInvoiceRun({ runId, failed: true });
    throw error;
  }
  await bookkeepingActivities.finishInvoiceRun({ runId });
}
