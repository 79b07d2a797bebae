import type { Services } from '../src/services';
import type { InvoiceActivities } from '../workflows/invoice-lifecycle.types';
import { withHeartbeat } from './adapter';

export function createInvoiceActivities(services: Services): InvoiceActivities {
  const { invoiceLifecycle, organisationSettings, collections } = services;
  return {
    raiseInvoice: (input) => withHeartbeat(() => invoiceLifecycle.raise(input)),
    unraiseInvoice: (input) => withHeartbeat(() => invoiceLifecycle.unraise(input)),
    sendInvoice: (input) => withHeartbeat(() => invoiceLifecycle.send(input)),
    unsendInvoice: (input) => withHeartbeat(() => invoiceLifecycle.unsend(input)),
    payInvoice: (input) => withHeartbeat(() => invoiceLifecycle.pay(input)),
    unpayInvoice: (input) => withHeartbeat(() => invoiceLifecycle.unpay(input)),
    cancelInvoice: (input) => withHeartbeat(() => invoiceLifecycle.cancel(input)),
    uncancelInvoice: (input) => withHeartbeat(() => invoiceLifecycle.uncancel(input)),
    invoiceSnapshot: (input) => invoiceLifecycle.snapshot(input),
    invoiceUndoWindow: (input) => organisationSettings.invoiceUndoWindowMs(input.organisationId),
    invoiceReminderPlan: (input) => withHeartbeat(() => collections.reminderPlan(input)),
    sendInvoiceReminder: (input) => withHeartbeat(() => collections.remind(input)),
  };
}
