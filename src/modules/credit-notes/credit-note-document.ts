import type { Knex } from 'knex';
import { orNotFound } from '../../domain/errors';
import { toDecimal } from '../../domain/money';
import { loadInvoiceDocument, type InvoiceDocument } from '../invoices';
import { createCreditNoteRepository } from './credit-notes.repository';
import { toCreditNote } from './credit-note-view';

/** What a credit note's PDF shows: laid out as its invoice, with the invoice's parties and the organisation's template. */
export async function loadCreditNoteDocument(db: Knex, organisationId: string, creditNoteId: string): Promise<InvoiceDocument> {
  const note = toCreditNote(orNotFound(await createCreditNoteRepository(db).find(organisationId, creditNoteId), 'Credit note'));
  const invoice = await loadInvoiceDocument(db, organisationId, note.invoiceId);
  return {
    ...invoice,
    heading: note.number ? `Credit note ${note.number}` : 'Draft credit note',
    notes: [`Credits invoice ${invoice.number} of ${invoice.date}`, `Reason: ${note.reason}`],
    number: note.number,
    status: note.status,
    date: note.date,
    dueDate: null,
    items: note.items.map((item) => ({ title: item.title, description: null, quantity: item.quantity ?? '', price: '', amount: item.amount })),
    subtotal: note.subtotal,
    taxes: toDecimal(note.taxTotal).isZero() ? [] : [{ name: 'Tax credited', rate: null, amount: note.taxTotal }],
    total: note.total,
    baseCurrency: null,
    baseTotal: null,
  };
}
