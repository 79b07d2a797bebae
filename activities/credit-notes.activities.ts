import type { Services } from '../src/services';
import type { CreditNoteActivities } from '../workflows/credit-note.types';

export function createCreditNoteActivities(services: Services): CreditNoteActivities {
  const { creditNoteLifecycle } = services;
  return {
    issueCreditNote: (input) => creditNoteLifecycle.issue(input),
    voidCreditNote: (input) => creditNoteLifecycle.void(input),
    undoCreditNote: (input) => creditNoteLifecycle.undo(input),
    /** E-mails an issued credit note; a mail server that is away is tried again. */
    mailCreditNote: (input) => creditNoteLifecycle.mail(input),
  };
}
