import type { Services } from '../src/services';
import type { CancelInput, PayInput, ReminderInput, StepInput } from '../workflows/invoice-lifecycle.types';
import { withHeartbeat } from './adapter';

export function createInvoiceActivities(services: Services) {
  const { invoiceLifecycle, organisationSettings, collections } = services;
  return {
    raiseInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.raise(input)),
    unraiseInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.unraise(input)),
    sendInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.send(input)),
    unsendInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.unsend(input)),
    payInvoice: (input: PayInput) => withHeartbeat(() => invoiceLifecycle.pay(input)),
    unpayInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.unpay(input)),
    cancelInvoice: (input: CancelInput) => withHeartbeat(() => invoiceLifecycle.cancel(input)),
    uncancelInvoice: (input: StepInput) => withHeartbeat(() => invoiceLifecycle.uncancel(input)),
    invoiceSnapshot: (input: { organisationId: string; invoiceId: string }) => invoiceLifecycle.snapshot(input),
    invoiceUndoWindow: (input: { organisationId: string }) => organisationSettings.invoiceUndoWindowMs(input.organisationId),
    invoiceReminderPlan: (input: { organisationId: string; invoiceId: string }) => withHeartbeat(() => collections.reminderPlan(input)),
    sendInvoiceReminder: (input: ReminderInput) => withHeartbeat(() => collections.remind(input)),
  };
}

export type InvoiceActivities = ReturnType<typeof createInvoiceActivities>;
