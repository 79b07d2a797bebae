import type { InvoiceState, InvoiceStep } from '../src/domain/invoice-state';

export interface InvoiceLifecycleInput {
  invoiceId: string;
  organisationId: string;
  /** Carried across continue-as-new; absent on the first run. */
  carried?: { state: InvoiceState; transitions: RecordedTransition[]; nextSeq: number };
}

/** One applied step and what its undo needs. */
export interface RecordedTransition {
  seq: number;
  step: InvoiceStep;
  from: InvoiceState;
  to: InvoiceState;
}

export interface StepInput {
  invoiceId: string;
  organisationId: string;
  seq: number;
  from: InvoiceState;
}

export interface PayInput extends StepInput {
  paidDate: string;
}

export interface CancelInput extends StepInput {
  comments?: string;
}

export interface LifecycleView {
  state: InvoiceState;
  allowedActions: string[];
  transitions: number;
}

/** The reminders an owed invoice still has ahead; no due date: none. */
export interface ReminderPlan {
  dueDate: string | null;
  /** Days after the due date, ascending. */
  daysAfterDue: number[];
}

export interface ReminderInput {
  invoiceId: string;
  organisationId: string;
  daysAfterDue: number;
}

/** What a reminder came to: e-mailed and recorded, recorded already (a retry), or the invoice is no longer owed. */
export type ReminderOutcome = 'sent' | 'already sent' | 'not owed';
