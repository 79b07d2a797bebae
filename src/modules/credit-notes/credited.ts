import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { taxOn, type CreditableInvoice, type CreditedSoFar, type UsageWindowLimits } from '../../domain/credit-notes';
import { sumAmounts, toDecimal } from '../../domain/money';
import { chargeOfLine, heldByCharge, heldInWindow, windowOf, type NotedLine } from '../../domain/usage-held';
import { chargesIn } from '../charges';
import { contractTaxesOf, planChangesIn } from '../contracts';
import { invoicesIn, type InvoiceItemRow, type InvoiceRow } from '../invoices';
import { createCreditNoteRepository } from './credit-notes.repository';

/** A tax line as the raise records it in the invoice's data. */
interface RecordedTax {
  name: string;
  rate: string;
  amount: string;
  /** Recorded since credit notes tax each line by its own taxes; absent on invoices raised before. */
  appliesTo?: 'all' | string[];
  /** The items the line taxed, recorded since tax lines are versioned; absent on invoices raised before. */
  items?: string[];
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
      ...(tax.items ? { items: tax.items } : {}),
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

/**
 * What credit notes that count (not voided) credited of the invoices' lines, each with its plan item, days
 * and dimension values: what the rating engine needs to know what a usage window still holds.
 */
export async function notedLinesOf(trx: Knex, invoiceIds: readonly string[]): Promise<NotedLine[]> {
  const credited = await createCreditNoteRepository(trx).creditedItemsOf(invoiceIds);
  if (credited.length === 0) return [];
  const items = new Map((await invoicesIn(trx).itemsByIds(credited.map((row) => row.invoice_item_id))).map((item) => [item.id, item]));
  return credited.flatMap((row) => {
    const item = items.get(row.invoice_item_id);
    return item ? [notedLine(row.invoice_id, item, row.amount)] : [];
  });
}

/** An invoice line as `usage-held` matches it to its charge, with what notes credited of it. */
function notedLine(invoiceId: string, item: InvoiceItemRow, amount: string): NotedLine {
  return {
    invoiceId,
    planItemId: item.plan_item_id,
    from: item.from_date ? calendarDay(item.from_date) : null,
    to: item.to_date ? calendarDay(item.to_date) : null,
    dimensions: item.dimensions ?? null,
    amount,
  };
}

/**
 * The usage charges of a contract plan and what each still holds for the customer (its credit notes and
 * the cancelled invoices read; `alsoCancelled` counted as cancelled too).
 */
async function usageHoldings(trx: Knex, contractPlanId: string, alsoCancelled?: string) {
  const charges = (await chargesIn(trx).of([contractPlanId])).filter((charge) => charge.kind === 'usage');
  const invoiceIds = [...new Set(charges.map((charge) => charge.invoiceId))];
  const cancelled = await invoicesIn(trx).cancelledAmong(invoiceIds);
  if (alsoCancelled) cancelled.add(alsoCancelled);
  return { charges, held: heldByCharge(charges, await notedLinesOf(trx, invoiceIds), cancelled) };
}

/**
 * The invoice's usage lines whose window was given back in part since it was charged (a later correction
 * of its usage, a credit note on another line of it): per window, its lines and what it still holds, for
 * `planCreditNote`. Windows that hold at least what their lines may be credited are left out. Read under
 * the contract's row lock, which runs take to charge the windows again.
 */
export async function usageWindowLimitsOf(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_plan_id'>): Promise<UsageWindowLimits> {
  if (!invoice.contract_plan_id) return [];
  const { charges, held } = await usageHoldings(trx, invoice.contract_plan_id);
  if (!charges.some((charge) => charge.invoiceId === invoice.id)) return [];
  const windows = new Map<number, { itemIds: string[]; left: string }>();
  for (const item of await invoicesIn(trx).items(invoice.id)) {
    const index = chargeOfLine(charges, notedLine(invoice.id, item, '0'));
    if (index < 0) continue;
    const window = windowOf(charges, index);
    // A window charged by this invoice alone holds what its lines do: their own limits say as much.
    if (window.length === 1) continue;
    const key = Math.min(...window);
    const entry = windows.get(key) ?? { itemIds: [], left: heldInWindow(held, window).toFixed() };
    entry.itemIds.push(item.id);
    windows.set(key, entry);
  }
  return [...windows.values()];
}

/**
 * A cancelled invoice's corrections that give usage back, were it restored, beyond what their windows hold
 * without it (a credit note gave the usage back since): the first such window, or nothing. Its charges
 * that charge usage need no such check: what they charge again, the next run gives back if the usage is
 * gone.
 */
export async function correctionBeyondHeld(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_plan_id'>): Promise<{ from: string; to: string; givesBack: string; holds: string } | undefined> {
  if (!invoice.contract_plan_id) return undefined;
  const { charges, held } = await usageHoldings(trx, invoice.contract_plan_id, invoice.id);
  const corrections = charges.flatMap((charge, index) => (charge.invoiceId === invoice.id && toDecimal(charge.amount).isNegative() ? [index] : []));
  if (corrections.length === 0) return undefined;
  for (const index of corrections) {
    const window = windowOf(charges, index);
    const givesBack = window.filter((i) => corrections.includes(i)).reduce((sum, i) => sum.minus(charges[i]!.amount), toDecimal(0));
    const holds = heldInWindow(held, window);
    if (givesBack.greaterThan(holds)) return { from: charges[index]!.from, to: charges[index]!.to, givesBack: givesBack.toFixed(), holds: holds.toFixed() };
  }
  return undefined;
}
