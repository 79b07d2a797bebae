import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { taxOn, type CreditableInvoice, type CreditedSoFar } from '../../domain/credit-notes';
import { sumAmounts, toDecimal } from '../../domain/money';
import { contractTaxesOf, planChangesIn } from '../contracts';
import { invoicesIn, type InvoiceRow } from '../invoices';
import { createCreditNoteRepository } from './credit-notes.repository';

/** A tax line as the raise records it in the invoice's data. */
interface RecordedTax {
  name: string;
  rate: string;
  amount: string;
  /** Recorded since credit notes tax each line by its own taxes; absent on invoices raised before. */
  appliesTo?: 'all' | string[];
}

type InvoiceFacts = Pick<InvoiceRow, 'id' | 'organisation_id' | 'contract_id' | 'currency' | 'subtotal' | 'tax_total' | 'total' | 'data'>;

/**
 * The invoice as its credit notes credit it: every line (the discount lines too) and the tax lines of
 * its raise. A tax line raised before the raise recorded its plan items applies to those the contract's
 * tax of the same name and rate applies to, else to every item.
 */
export async function creditableOf(trx: Knex, invoice: InvoiceFacts): Promise<CreditableInvoice> {
  const recorded = (invoice.data.taxes as RecordedTax[] | undefined) ?? [];
  const current = invoice.contract_id && recorded.some((tax) => tax.appliesTo === undefined) ? await contractTaxesOf(trx, invoice.organisation_id, invoice.contract_id) : [];
  const items = await invoicesIn(trx).items(invoice.id);
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
    taxes: recorded.map((tax) => ({
      rate: tax.rate,
      amount: tax.amount,
      appliesTo: tax.appliesTo ?? current.find((contractTax) => contractTax.name === tax.name && toDecimal(contractTax.rate).equals(tax.rate))?.appliesTo ?? 'all',
    })),
  };
}

/** Net credited per invoice item: by the invoice's credit notes (not voided), and by plan changes whose credit for its fees sits on a later invoice. */
async function creditsOf(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_id'>) {
  const byNotes = await createCreditNoteRepository(trx).creditedSoFar(invoice.id);
  const byChanges = invoice.contract_id ? await planChangesIn(trx).creditsOnInvoice(invoice.contract_id, invoice.id) : new Map<string, string>();
  const byItem = new Map(byNotes.byItem);
  for (const [itemId, amount] of byChanges) byItem.set(itemId, sumAmounts([byItem.get(itemId) ?? '0', amount]).toFixed());
  return { byNotes, byChanges, byItem };
}

/** What has been credited of each of the invoice's items, so that no line is credited twice over. Read under the invoice's row lock. */
export async function creditedByItem(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_id'>): Promise<ReadonlyMap<string, string>> {
  return (await creditsOf(trx, invoice)).byItem;
}

/**
 * What has been credited of the invoice so far: by its credit notes (not voided), and by plan changes
 * (with the taxes of the items they credit, each tax line rounded as a credit note's), so that no line
 * is credited twice over. Read under the invoice's row lock.
 */
export async function creditedOf(trx: Knex, invoice: InvoiceFacts): Promise<CreditedSoFar> {
  const { byNotes, byChanges, byItem } = await creditsOf(trx, invoice);
  if (byChanges.size === 0) return byNotes;
  const net = sumAmounts([...byChanges.values()]);
  const gross = net.plus(taxOn(await creditableOf(trx, invoice), byChanges));
  return { subtotal: net.plus(byNotes.subtotal).toFixed(), total: gross.plus(byNotes.total).toFixed(), byItem };
}
