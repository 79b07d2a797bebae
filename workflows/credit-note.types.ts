import { defineUpdate } from '@temporalio/workflow';

/** The contract of `creditNoteWorkflow`: its input, its Updates and its activities. */

export interface CreditNoteWorkflowInput {
  organisationId: string;
  creditNoteId: string;
}

// Update names are stored in histories: renaming one is a breaking change.
export const issueCreditNoteUpdate = defineUpdate<void>('issue');
export const voidCreditNoteUpdate = defineUpdate<void>('void');
export const undoCreditNoteUpdate = defineUpdate<void>('undo');

/** A step with an id of its own, the same on every retry, so that a step that committed is not run twice. */
export interface CreditNoteStepInput extends CreditNoteWorkflowInput {
  stepId: string;
}

export interface CreditNoteActivities {
  issueCreditNote(input: CreditNoteStepInput): Promise<void>;
  voidCreditNote(input: CreditNoteStepInput): Promise<void>;
  undoCreditNote(input: CreditNoteStepInput): Promise<void>;
  /** E-mails an issued credit note; a mail server that is away is tried again. */
  mailCreditNote(input: CreditNoteWorkflowInput): Promise<void>;
}
