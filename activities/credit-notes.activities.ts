import type { Services } from '../src/services';
import type { CreditNoteStepInput } from '../src/modules/lifecycles';

export function createCreditNoteActivities(services: Services) {
  const { creditNoteLifecycle } = services;
  return {
    issueCreditNote: (input: CreditNoteStepInput) => creditNoteLifecycle.issue(input),
    voidCreditNote: (input: CreditNoteStepInput) => creditNoteLifecycle.void(input),
    undoCreditNote: (input: CreditNoteStepInput) => creditNoteLifecycle.undo(input),
    /** E-mails an issued credit note; a mail server that is away is tried again. */
    mailCreditNote: (input: { organisationId: string; creditNoteId: string }) => creditNoteLifecycle.mail(input),
  };
}

export type CreditNoteActivities = ReturnType<typeof createCreditNoteActivities>;
