import type { Knex } from 'knex';
import { createCreditNoteRepository } from './credit-notes.repository';

export { loadCreditNoteDocument } from './credit-note-document';
export { toCreditNote } from './credit-note-view';
export type { CreditNoteChange, CreditNoteRow, CreditNoteSettlement } from './credit-notes.repository';
export { createCreditNoteService } from './credit-notes.service';
export { correctionBeyondHeld, creditableOf, creditedByItem, creditedOf, notedLinesOf } from './credited';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type CreditNoteAccess = Pick<ReturnType<typeof createCreditNoteRepository>, 'anyStanding' | 'apply' | 'find' | 'issuedNetByItem' | 'issuedOfInvoice' | 'lock'>;
export const creditNotesIn = (db: Knex): CreditNoteAccess => createCreditNoteRepository(db);
