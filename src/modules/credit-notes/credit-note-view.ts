import { calendarDay } from '../../db/dates';
import { formatAmount, formatExactOrNull } from '../../domain/money';
import type { CreditNoteWithItems } from './credit-notes.repository';
import type { CreditNote } from './credit-notes.schemas';

/** A credit note as the API shows it. */
export function toCreditNote(row: CreditNoteWithItems): CreditNote {
  const money = (value: string) => formatAmount(value, row.currency);
  return {
    id: row.id,
    number: row.number,
    invoiceId: row.invoice_id,
    customerId: row.customer_id,
    status: row.status,
    reason: row.reason,
    date: calendarDay(row.date),
    currency: row.currency,
    subtotal: money(row.subtotal),
    taxTotal: money(row.tax_total),
    total: money(row.total),
    refund: row.refund,
    settlement: row.settlement,
    // The refund's payment counts only while the note is issued: a void or an undo deletes it.
    refundPaymentId: row.status === 'issued' ? row.refund_payment_id : null,
    items: row.items.map((item) => ({ invoiceItemId: item.invoice_item_id, title: item.title, quantity: formatExactOrNull(item.quantity), amount: money(item.amount) })),
    issuedAt: row.issued_at?.toISOString() ?? null,
    voidedAt: row.voided_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
