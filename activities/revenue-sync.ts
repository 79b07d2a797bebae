import type { Knex } from 'knex';
import { calendarDay } from '../src/db/dates';
import { newId } from '../src/db/ids';
import type { InvoiceState } from '../src/domain/invoice-state';
import { recogniseStraightLine } from '../src/domain/revenue';

const STATUS_BY_INVOICE: Partial<Record<InvoiceState, 'recognised' | 'collected' | 'reversed'>> = {
  raised: 'recognised',
  sent: 'recognised',
  paid: 'collected',
  cancelled: 'reversed',
};

interface SyncInvoice {
  id: string;
  organisation_id: string;
  currency: string;
  date: Date | string;
  from_date: Date | string | null;
  to_date: Date | string | null;
}

/**
 * Revenue is derived, never edited: the records of an invoice are recomputed from its items and its state
 * inside the transition's own transaction, so a retry or an undo leaves exactly one consistent set.
 * A draft has none; a cancelled invoice keeps its records, marked reversed. `onlyItemId` limits the sync
 * to one item (POST /revenue/sync).
 */
export async function syncInvoiceRevenue(trx: Knex.Transaction, invoice: SyncInvoice, state: InvoiceState, onlyItemId?: string): Promise<number> {
  const status = STATUS_BY_INVOICE[state];
  const scope = () => trx('revenue_records').where({ invoice_id: invoice.id, ...(onlyItemId ? { invoice_item_id: onlyItemId } : {}) });
  if (!status) {
    await scope().delete();
    return 0;
  }
  if (state === 'cancelled') return scope().update({ status, updated_at: trx.fn.now() });
  const items = await trx('invoice_items')
    .where({ invoice_id: invoice.id, ...(onlyItemId ? { id: onlyItemId } : {}) })
    .select<Array<{ id: string; amount: string | null; from_date: Date | null; to_date: Date | null }>>('id', 'amount', 'from_date', 'to_date');
  const invoiceDate = calendarDay(invoice.date);
  const rows = items.flatMap((item) => {
    const from = calendarDay(item.from_date ?? invoice.from_date ?? invoiceDate);
    const to = calendarDay(item.to_date ?? invoice.to_date ?? from);
    return recogniseStraightLine(item.amount ?? '0', invoice.currency, from, to).map((slice) => ({
      id: newId('rev'),
      organisation_id: invoice.organisation_id,
      invoice_id: invoice.id,
      invoice_item_id: item.id,
      period: slice.month,
      days: slice.days,
      amount: slice.amount,
      currency: invoice.currency,
      status,
    }));
  });
  await scope().delete();
  if (rows.length > 0) await trx('revenue_records').insert(rows);
  return rows.length;
}
