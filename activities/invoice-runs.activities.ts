import type { Services } from '../src/services';
import type { InvoiceService } from '../src/modules/invoices';
import type { InvoiceRunActivities } from '../workflows/invoice-run.types';
import { withHeartbeat } from './adapter';

export function createInvoiceRunActivities(services: Services, drivers: { invoices: InvoiceService }): InvoiceRunActivities {
  const { invoiceRuns, organisationSettings } = services;
  return {
    /** Records the run; says too whether the organisation auto-advances its drafts, as its settings are when the run begins. */
    beginInvoiceRun: async (input) => {
      const begun = await invoiceRuns.begin(input);
      const settings = await organisationSettings.get(input.organisationId);
      return { ...begun, autoAdvance: settings.autoRaiseGeneratedInvoices };
    },
    /** A page of contracts, billed together in one transaction; a retry skips those already billed. */
    billContracts: (input) => withHeartbeat(() => invoiceRuns.billContracts(input)),
    finishInvoiceRun: (input) => invoiceRuns.finish(input),
    /**
     * Auto-advance: with the organisation's settings on, each draft the run made is raised (and sent)
     * through its own invoice workflow's Updates, as by hand. The Update ids are keyed by run and invoice,
     * so a retried activity joins the first Update instead of running another.
     */
    advanceRunInvoices: (input) =>
      withHeartbeat(async () => {
        const settings = await organisationSettings.get(input.organisationId);
        if (!settings.autoRaiseGeneratedInvoices) return { advanced: 0 };
        let advanced = 0;
        for (const invoiceId of await invoiceRuns.invoiceIdsOf(input.runId)) {
          const invoice = await drivers.invoices.get(input.organisationId, invoiceId);
          if (invoice.status === 'draft') await drivers.invoices.transition(input.organisationId, invoiceId, 'raise', {}, `run:${input.runId}:raise:${invoiceId}`);
          if (settings.autoSendGeneratedInvoices && ['draft', 'raised'].includes(invoice.status)) {
            await drivers.invoices.transition(input.organisationId, invoiceId, 'send', {}, `run:${input.runId}:send:${invoiceId}`);
          }
          advanced += 1;
        }
        return { advanced };
      }),
  };
}
