import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import type { CreditableInvoice, CreditedSoFar } from '../../domain/credit-notes';
import { roundToMinor, sumAmounts, toDecimal } from '../../domain/money';
import { createPlanChangeRepository } from '../contracts/plan-changes.repository';
import { createInvoiceRepository, type InvoiceRow } from '../invoices/invoices.repository';
import { createCreditNoteRepository } from './credit-notes.repository';

/** The invoice as its credit notes credit it: every line, the discount lines too. */
export async function creditableOf(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'currency' | 'subtotal' | 'tax_total' | 'total'>): Promise<CreditableInvoice> {
  const items = await createInvoiceRepository(trx).items(invoice.id);
  return {
    currency: invoice.currency,
    subtotal: invoice.subtotal ?? '0',
    taxTotal: invoice.tax_total ?? '0',
    total: invoice.total ?? '0',
    items: items.map((item) => ({
      id: item.id,
      title: item.title,
      quantity: item.quantity,
      price: item.price,
      amount: item.amount ?? '0',
      planItemId: item.plan_item_id,
      couponId: item.coupon_id,
      fromDate: item.from_date ? calendarDay(item.from_date) : null,
      toDate: item.to_date ? calendarDay(item.to_date) : null,
    })),
  };
}

/**
 * What has been credited of the invoice so far: by its credit notes (not voided), and by plan changes whose
 * credit for its in-advance fees sits on a later invoice (their tax in the invoice's proportion), so that
 * no line is credited twice over. Read under the invoice's row lock.
 */
export async function creditedOf(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_id' | 'currency' | 'subtotal' | 'total'>): Promise<CreditedSoFar> {
  const byNotes = await createCreditNoteRepository(trx).creditedSoFar(invoice.id);
  const byChanges = invoice.contract_id ? await createPlanChangeRepository(trx).creditsOnInvoice(invoice.contract_id, invoice.id) : new Map<string, string>();
  if (byChanges.size === 0) return byNotes;
  const net = sumAmounts([...byChanges.values()]);
  const subtotal = toDecimal(invoice.subtotal ?? '0');
  const gross = subtotal.isZero() ? net : roundToMinor(net.times(invoice.total ?? '0').dividedBy(subtotal), invoice.currency);
  const byItem = new Map(byNotes.byItem);
  for (const [itemId, amount] of byChanges) byItem.set(itemId, sumAmounts([byItem.get(itemId) ?? '0', amount]).toFixed());
  return { subtotal: net.plus(byNotes.subtotal).toFixed(), total: gross.plus(byNotes.total).toFixed(), byItem };
}
