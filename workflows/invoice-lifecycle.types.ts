import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { InvoiceState, InvoiceStep } from '../src/domain/invoice-state';

/** The contract of `invoiceLifecycleWorkflow`: its input, its Updates and Query, and its activities. */

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
  /** The payment attempt whose gateway payment pays the invoice: recorded as its payment, never a second one. */
  collectedAttemptId?: string;
}

/** What `markPaid` takes: the paid date and, when a gateway collected the money, the attempt that did. */
export interface MarkPaidArgs {
  paidDate: string;
  collectedAttemptId?: string;
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
  /**
   * When each reminder goes out (epoch milliseconds, one per `daysAfterDue`): the start of its day in the
   * customer's time zone, else the organisation's. Absent from plans made before zones were read.
   */
  sendAt?: number[];
}

export interface ReminderInput {
  invoiceId: string;
  organisationId: string;
  daysAfterDue: number;
}

/** What a reminder came to: e-mailed and recorded, recorded already (a retry), or the invoice is no longer owed. */
export type ReminderOutcome = 'sent' | 'already sent' | 'not owed';

// Update names are stored in histories: renaming one is a breaking change.
export const raiseUpdate = defineUpdate<LifecycleView>('raise');
export const sendUpdate = defineUpdate<LifecycleView>('send');
export const markPaidUpdate = defineUpdate<LifecycleView, [MarkPaidArgs]>('markPaid');
export const cancelUpdate = defineUpdate<LifecycleView, [{ comments?: string }]>('cancel');
export const undoUpdate = defineUpdate<LifecycleView>('undo');
export const lifecycleQuery = defineQuery<LifecycleView>('lifecycle');

/** The invoice's lifecycle as Postgres records it: what a workflow rebuilds from. */
export type LifecycleSnapshot = NonNullable<InvoiceLifecycleInput['carried']>;

export interface InvoiceRef {
  organisationId: string;
  invoiceId: string;
}

export interface InvoiceActivities {
  /** Raises the draft: it gets its number, which the workflow shows as a search attribute. */
  raiseInvoice(input: StepInput): Promise<{ number: string }>;
  unraiseInvoice(input: StepInput): Promise<void>;
  sendInvoice(input: StepInput): Promise<void>;
  unsendInvoice(input: StepInput): Promise<void>;
  payInvoice(input: PayInput): Promise<void>;
  unpayInvoice(input: StepInput): Promise<void>;
  cancelInvoice(input: CancelInput): Promise<void>;
  uncancelInvoice(input: StepInput): Promise<void>;
  invoiceSnapshot(input: InvoiceRef): Promise<LifecycleSnapshot>;
  /** How long a settled invoice's workflow waits for an undo, in ms (the organisation's setting). */
  invoiceUndoWindow(input: { organisationId: string }): Promise<number>;
  invoiceReminderPlan(input: InvoiceRef): Promise<ReminderPlan>;
  sendInvoiceReminder(input: ReminderInput): Promise<ReminderOutcome>;
}
