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
