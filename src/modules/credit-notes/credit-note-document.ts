import type { Knex } from 'knex';
import { localeDate } from '../../domain/document-locale';
import { orNotFound } from '../../domain/errors';
import { toDecimal } from '../../domain/money';
import { invoicesIn, loadInvoiceDocument, type InvoiceDocument } from '../invoices';
import { createCreditNoteRepository } from './credit-notes.repository';
import { toCreditNote } from './credit-note-view';

/**
 * What a credit note's PDF shows: laid out as its invoice, with the invoice's parties, locale and the
 * organisation's template; each line with the unit price of the invoice line it credits.
 */
export async function loadCreditNoteDocument(db: Knex, organisationId: string, creditNoteId: string): Promise<InvoiceDocument> {
  const note = toCreditNote(orNotFound(await createCreditNoteRepository(db).find(organisationId, creditNoteId), 'Credit note'));
  const invoice = await loadInvoiceDocument(db, organisationId, note.invoiceId, null);
  const priceOf = new Map((await invoicesIn(db).items(note.invoiceId)).map((item) => [item.id, toDecimal(item.price).toFixed()]));
  return {
    ...invoice,
    heading: note.number ? `Credit note ${note.number}` : 'Draft credit note',
    notes: [`Credits invoice ${invoice.number} of ${localeDate(invoice.date, invoice.locale)}`, `Reason: ${note.reason}`],
    number: note.number,
    status: note.status,
    date: note.date,
    dueDate: null,
    items: note.items.map((item) => ({ title: item.title, description: null, quantity: item.quantity ?? '', price: priceOf.get(item.invoiceItemId) ?? '', amount: item.amount })),
    subtotal: note.subtotal,
    taxes: toDecimal(note.taxTotal).isZero() ? [] : [{ name: 'Tax credited', rate: null, amount: note.taxTotal }],
    total: note.total,
    baseCurrency: null,
    baseTotal: null,
    paymentDetails: null,
  };
}
