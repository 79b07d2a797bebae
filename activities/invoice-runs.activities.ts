import { AppError } from '../src/domain/errors';
import type { Services } from '../src/services';
import type { InvoiceService } from '../src/modules/invoices';
import type { InvoiceRunScheduleService } from '../src/modules/invoice-run-schedules';
import type { InvoiceRunActivities } from '../workflows/invoice-run.types';
import type { ProgressiveBillingActivities } from '../workflows/progressive-billing.types';
import { withHeartbeat } from './adapter';

/**
 * Auto-advance: with the organisation's settings on, each draft is raised (and sent) through its own
 * invoice workflow's Updates, as by hand. `updateKey` and the invoice name each Update, so that a retried
 * activity joins the first Update instead of running another.
 */
async function advanceDrafts(services: Services, invoices: InvoiceService, organisationId: string, invoiceIds: Iterable<string>, updateKey: string): Promise<{ advanced: number }> {
  const settings = await services.organisationSettings.get(organisationId);
  if (!settings.autoRaiseGeneratedInvoices) return { advanced: 0 };
  let advanced = 0;
  for (const invoiceId of invoiceIds) {
    const invoice = await invoices.get(organisationId, invoiceId);
    if (invoice.status === 'draft') await invoices.transition(organisationId, invoiceId, 'raise', {}, `${updateKey}:raise:${invoiceId}`);
    if (settings.autoSendGeneratedInvoices && ['draft', 'raised'].includes(invoice.status)) {
      await invoices.transition(organisationId, invoiceId, 'send', {}, `${updateKey}:send:${invoiceId}`);
    }
    advanced += 1;
  }
  return { advanced };
}

export function createInvoiceRunActivities(services: Services, drivers: { invoices: InvoiceService; schedules: Pick<InvoiceRunScheduleService, 'dropIfOrphan'> }): InvoiceRunActivities & ProgressiveBillingActivities {
  const { invoiceRuns, organisationSettings, progressiveBilling } = services;
  return {
    /** Records the run; says too whether the organisation auto-advances its drafts, as its settings are when the run begins. */
    beginInvoiceRun: async (input) => {
      // A run its Schedule started (no run id yet) bills nothing without the schedule's row; one that has
      // recorded itself already (this is a retry) goes on, and its workflow finishes it either way.
      const firstStep = input.scheduleId !== undefined && input.runId === undefined && !(await invoiceRuns.recorded(input.workflowId));
      if (firstStep && (await drivers.schedules.dropIfOrphan(input.organisationId, input.scheduleId!))) {
        throw AppError.conflict(`Invoice run schedule ${input.scheduleId} no longer exists: its Temporal Schedule was deleted and this run bills nothing`);
      }
      const begun = await invoiceRuns.begin(input);
      const settings = await organisationSettings.get(input.organisationId);
      return { ...begun, autoAdvance: settings.autoRaiseGeneratedInvoices };
    },
    /** A page of contracts, billed together in one transaction; a retry skips those already billed. */
    billContracts: (input) => withHeartbeat(() => invoiceRuns.billContracts(input)),
    finishInvoiceRun: (input) => invoiceRuns.finish(input),
    /** Auto-advance of the drafts the run made (Updates keyed by run and invoice). */
    advanceRunInvoices: (input) => withHeartbeat(async () => advanceDrafts(services, drivers.invoices, input.organisationId, await invoiceRuns.invoiceIdsOf(input.runId), `run:${input.runId}`)),
    /** A contract's progressive billing check and its invoices, in one transaction. */
    billProgressiveThresholds: (input) => progressiveBilling.bill({ organisationId: input.organisationId, contractId: input.contractId }),
    /** Auto-advance of a progressive invoice (Updates keyed by the invoice). */
    advanceProgressiveInvoices: (input) => withHeartbeat(() => advanceDrafts(services, drivers.invoices, input.organisationId, input.invoiceIds, 'progressive')),
  };
}
