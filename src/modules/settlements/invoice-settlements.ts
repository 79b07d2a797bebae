import type { Knex } from 'knex';
import { creditNotesIn } from '../credit-notes';
import type { InvoiceSettlements, SettlementReader } from '../invoices';
import { paymentsIn } from '../payments';

const day = (instant: Date) => instant.toISOString().slice(0, 10);

/**
 * What settles an invoice, as its document lists it: its issued credit notes and its live payments
 * (refunds, negative, name their credit note). Reads through each owner's accessor, in `db` (which may be
 * a transaction).
 */
export const invoiceSettlements: SettlementReader = async (db: Knex, organisationId: string, invoiceId: string): Promise<InvoiceSettlements> => {
  const [notes, payments] = await Promise.all([creditNotesIn(db).issuedOfInvoice(organisationId, invoiceId), paymentsIn(db).listOfInvoice(organisationId, invoiceId)]);
  const numberOf = new Map(notes.map((note) => [note.id, note.number]));
  return {
    creditNotes: notes.map((note) => ({ number: note.number, date: day(note.issued_at ?? note.created_at), total: note.total, settlement: note.settlement })),
    payments: payments.map((payment) => ({
      date: day(payment.paid_at),
      amount: payment.amount,
      method: payment.method,
      reference: payment.reference,
      refundOf: payment.credit_note_id === null ? null : (numberOf.get(payment.credit_note_id) ?? payment.credit_note_id),
    })),
  };
};
