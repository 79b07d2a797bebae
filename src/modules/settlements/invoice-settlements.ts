import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { dayIn } from '../../domain/zoned-days';
import { creditNotesIn } from '../credit-notes';
import { customerZone } from '../customers';
import type { InvoiceSettlements, SettlementReader } from '../invoices';
import { zoneOf } from '../organisation-settings';
import { paymentsIn } from '../payments';

/**
 * What settles an invoice, as its document lists it: its issued credit notes and its live payments
 * (refunds, negative, name their credit note). Reads through each owner's accessor, in `db` (which may be
 * a transaction).
 */
export const invoiceSettlements: SettlementReader = async (db: Knex, organisationId: string, invoiceId: string): Promise<InvoiceSettlements> => {
  const [notes, payments] = await Promise.all([creditNotesIn(db).issuedOfInvoice(organisationId, invoiceId), paymentsIn(db).listOfInvoice(organisationId, invoiceId)]);
  const numberOf = new Map(notes.map((note) => [note.id, note.number]));
  // A payment's day is read in the zone of the customer's dates, as its credit notes' dates were stamped.
  const customerId = payments[0]?.customer_id;
  const zone = customerId ? await zoneOf(db, organisationId, await customerZone(db, organisationId, customerId)) : 'UTC';
  return {
    creditNotes: notes.map((note) => ({ number: note.number, date: calendarDay(note.date), total: note.total, settlement: note.settlement })),
    payments: payments.map((payment) => ({
      date: dayIn(zone, payment.paid_at),
      amount: payment.amount,
      method: payment.method,
      reference: payment.reference,
      refundOf: payment.credit_note_id === null ? null : (numberOf.get(payment.credit_note_id) ?? payment.credit_note_id),
    })),
  };
};
