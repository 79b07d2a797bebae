import { currencyMinorUnits } from './currencies';
import { netOfDiscounts, type InvoiceLine } from './discounts';
import { AppError } from './errors';
import { allocate, Decimal, hasAtMostMinorUnits, roundToMinor, toDecimal } from './money';

/**
 * What a credit note may credit, and how much of it is tax. Pure: the caller reads the invoice and what
 * earlier credit notes (not voided) credited, under a lock on the invoice, and stores the plan.
 *
 * - Lines credit invoice items by net amount (or by quantity at the item's price, less that part's share
 *   of the item's discounts). An item is never credited beyond what it charged net of its discounts, and
 *   the invoice never beyond its total.
 * - Tax follows the lines: after a note of lines, the tax credited so far is, for each of the invoice's
 *   tax lines, its rate on what is credited so far of the items it applies to, rounded once per tax line
 *   as the raise rounds it, so rounding never accumulates across notes.
 * - A whole-invoice credit of an amount (tax included) takes what is left of the net and of the tax in
 *   the proportion of the amount to what is left of the total, and shares its net over the items in
 *   proportion to what is left to credit on each (largest remainder, in minor units).
 * Crediting everything left, in any number of notes of either kind, credits exactly the subtotal, the tax
 * and the total.
 */

/**
 * A credit note counts only against a raised, sent or paid invoice (one that went out and was not
 * cancelled), and pays money back only on a paid one.
 */
export function assertCreditable(invoiceStatus: string, refund: boolean): void {
  if (invoiceStatus !== 'raised' && invoiceStatus !== 'sent' && invoiceStatus !== 'paid') {
    throw AppError.conflict(`the invoice is ${invoiceStatus}: only a raised, sent or paid invoice can be credited`);
  }
  if (refund && invoiceStatus !== 'paid') throw AppError.conflict(`the invoice is ${invoiceStatus}: only a paid invoice can be refunded`);
}

export interface CreditableInvoice {
  currency: string;
  subtotal: string;
  taxTotal: string;
  total: string;
  /** Every line, its discount lines included. */
  items: ReadonlyArray<InvoiceLine & { title: string; quantity: string; price: string }>;
  /** The tax lines the raise computed, each over the items of the plan items it applies to. */
  /** Its tax lines: each over the items it taxed (`items`, recorded since tax lines are versioned), else by `appliesTo`. */
  taxes: ReadonlyArray<{ rate: string; amount: string; appliesTo: 'all' | readonly string[]; items?: readonly string[] }>;
}

/** What earlier credit notes of the invoice credited, voided ones left out. */
export interface CreditedSoFar {
  subtotal: string;
  total: string;
  /** Net credited per invoice item id. */
  byItem: ReadonlyMap<string, string>;
}

export type CreditRequest =
  | { lines: ReadonlyArray<{ invoiceItemId: string; amount?: string; quantity?: string }> }
  | { amount: string };

export interface CreditNoteLine {
  invoiceItemId: string;
  title: string;
  quantity: string | null;
  amount: string;
}

export interface CreditNotePlan {
  lines: CreditNoteLine[];
  subtotal: string;
  taxTotal: string;
  total: string;
}

const zero = new Decimal(0);
const min = (a: Decimal, b: Decimal) => (a.lessThan(b) ? a : b);
const max = (a: Decimal, b: Decimal) => (a.greaterThan(b) ? a : b);

/** What each item may be credited in all: what it charged net of its discounts (nothing, for a discount line). */
export function creditableAmounts(invoice: CreditableInvoice): Map<string, Decimal> {
  const net = netOfDiscounts(invoice.items, invoice.currency);
  return new Map(invoice.items.map((item) => [item.id, net.get(item.id) ?? zero]));
}

/**
 * The tax due on `byItem` (net credited per item): for each tax line, its rate on what is credited of the
 * items it applies to, rounded half-up to the minor unit as the raise rounds it, never beyond the line. A
 * tax line that came to nothing or below (a plan change's credit took back more tax than its items owed)
 * collected nothing, and gives nothing back.
 */
export function taxOn(invoice: CreditableInvoice, byItem: ReadonlyMap<string, string>): Decimal {
  const planItemOf = new Map(invoice.items.map((item) => [item.id, item.planItemId]));
  return invoice.taxes.reduce((sum, tax) => {
    const applies = (itemId: string) => {
      if (tax.items) return tax.items.includes(itemId);
      const planItemId = planItemOf.get(itemId) ?? null;
      return tax.appliesTo === 'all' || (planItemId !== null && tax.appliesTo.includes(planItemId));
    };
    const base = [...byItem].filter(([itemId]) => applies(itemId)).reduce((total, [, amount]) => total.plus(amount), zero);
    const collected = toDecimal(tax.amount);
    return collected.lessThanOrEqualTo(0) ? sum : sum.plus(min(roundToMinor(base.times(tax.rate).dividedBy(100), invoice.currency), collected));
  }, zero);
}

function money(value: string, currency: string, path: string): Decimal {
  const amount = toDecimal(value);
  if (!hasAtMostMinorUnits(amount, currency)) throw AppError.validation(`has more decimals than ${currency} has`, path);
  if (amount.lessThanOrEqualTo(0)) throw AppError.validation('must be greater than 0', path);
  return amount;
}

/**
 * Usage lines whose window was given back in part since (a later correction of its usage): the lines of
 * one window (its price entry's, split by presentation values or not) and what the window still holds
 * (`usage-held.ts`). Together they are credited no more than that.
 */
export type UsageWindowLimits = ReadonlyArray<{ itemIds: readonly string[]; left: string }>;

export function planCreditNote(invoice: CreditableInvoice, credited: CreditedSoFar, request: CreditRequest, windows: UsageWindowLimits = []): CreditNotePlan {
  const { currency } = invoice;
  const format = (value: Decimal) => value.toFixed(currencyMinorUnits(currency));
  const subtotal = toDecimal(invoice.subtotal);
  const total = toDecimal(invoice.total);
  const taxTotal = toDecimal(invoice.taxTotal);
  const netBefore = toDecimal(credited.subtotal);
  const grossBefore = toDecimal(credited.total);
  const taxBefore = grossBefore.minus(netBefore);
  const creditable = creditableAmounts(invoice);
  const windowOf = new Map(windows.flatMap((window) => window.itemIds.map((itemId) => [itemId, window] as const)));
  const leftOn = (itemId: string) => {
    const left = creditable.get(itemId)!.minus(toDecimal(credited.byItem.get(itemId) ?? '0'));
    const window = windowOf.get(itemId);
    return window ? min(left, max(toDecimal(window.left), zero)) : left;
  };
  const leftInTotal = total.minus(grossBefore);

  let lines: CreditNoteLine[];
  let net: Decimal;
  let tax: Decimal;
  if ('amount' in request) {
    const gross = money(request.amount, currency, 'body.amount');
    if (gross.greaterThan(leftInTotal)) throw AppError.conflict(`the credit of ${format(gross)} ${currency} exceeds what is left to credit on the invoice: ${format(max(leftInTotal, zero))} ${currency}`);
    // What is left of the net and of the tax, in the proportion of this amount to what is left of the
    // total: the items left to credit carry their own taxes, so what is left carries what is left of the tax.
    // Neither part goes below nothing: on an invoice whose tax is below nothing (a plan change's credit gave
    // back more tax than its lines owed), what is left of the total is all net.
    const netLeft = max(subtotal.minus(netBefore), zero);
    const taxLeft = max(taxTotal.minus(taxBefore), zero);
    net = max(min(roundToMinor(netLeft.times(gross).dividedBy(leftInTotal), currency), min(gross, netLeft)), gross.minus(taxLeft));
    tax = gross.minus(net);
    const open = invoice.items.map((item) => ({ item, left: max(leftOn(item.id), zero) })).filter(({ left }) => left.greaterThan(0));
    if (net.greaterThan(0) && open.length === 0) throw AppError.conflict('every item of the invoice is credited already');
    // Usage whose window a later correction gave back in part holds less than its line: the rest cannot take it.
    const openInAll = open.reduce((sum, { left }) => sum.plus(left), zero);
    if (net.greaterThan(openInAll)) throw AppError.conflict(`the credit of ${format(gross)} ${currency} exceeds what is left to credit on the invoice's items: ${format(openInAll)} ${currency} before tax`);
    const shares = net.greaterThan(0) ? allocate(net, open.map(({ left }) => left), currency) : [];
    lines = open
      .map(({ item }, i) => ({ invoiceItemId: item.id, title: item.title, quantity: null, amount: format(shares[i] ?? zero) }))
      .filter((line) => toDecimal(line.amount).greaterThan(0));
  } else {
    const byId = new Map(invoice.items.map((item) => [item.id, item]));
    const seen = new Set<string>();
    lines = request.lines.map((line, index) => {
      const path = `body.items.${index}`;
      const item = byId.get(line.invoiceItemId);
      if (!item) throw AppError.validation('is not an item of this invoice', `${path}.invoiceItemId`);
      if (seen.has(item.id)) throw AppError.validation('names an item already credited by another line of this credit note', `${path}.invoiceItemId`);
      seen.add(item.id);
      let amount: Decimal;
      let quantity: string | null = null;
      if (line.quantity !== undefined) {
        const units = toDecimal(line.quantity);
        if (units.lessThanOrEqualTo(0)) throw AppError.validation('must be greater than 0', `${path}.quantity`);
        if (units.greaterThan(toDecimal(item.quantity))) throw AppError.validation(`is more than the item's quantity, ${toDecimal(item.quantity).toFixed()}`, `${path}.quantity`);
        amount = roundToMinor(units.times(item.price), currency);
        if (amount.isZero()) throw AppError.validation(`credits nothing: ${units.toFixed()} × ${toDecimal(item.price).toFixed()} rounds to 0 ${currency}`, `${path}.quantity`);
        // What those units paid: their price less their share of the item's discounts.
        const discount = toDecimal(item.amount).minus(creditable.get(item.id)!);
        if (discount.greaterThan(0)) amount = amount.minus(roundToMinor(amount.times(discount).dividedBy(item.amount), currency));
        quantity = units.toFixed();
      } else {
        amount = money(line.amount!, currency, `${path}.amount`);
      }
      const left = leftOn(item.id);
      if (amount.lessThanOrEqualTo(0)) throw AppError.validation('credits nothing: nothing was charged for it once discounted', path);
      if (amount.greaterThan(left)) throw AppError.conflict(`item "${item.title}": ${format(amount)} ${currency} exceeds what is left to credit on it, ${format(max(left, zero))} ${currency}`);
      return { invoiceItemId: item.id, title: item.title, quantity, amount: format(amount) };
    });
    net = lines.reduce((sum, line) => sum.plus(line.amount), zero);
    const after = new Map(credited.byItem);
    for (const line of lines) after.set(line.invoiceItemId, toDecimal(after.get(line.invoiceItemId) ?? '0').plus(line.amount).toFixed());
    // The tax due on all that is credited so far, each tax line on its own items, less the tax credited so
    // far: a note of lines no tax applies to credits none, unless an earlier whole-invoice amount left a
    // minor unit of rounding to settle. Never beyond what is left of the tax, and never below nothing, even
    // on an invoice whose tax is below nothing (a plan change's credit gave back more tax than its lines owed).
    tax = max(min(taxOn(invoice, after).minus(taxBefore), taxTotal.minus(taxBefore)), zero);
    if (net.plus(tax).greaterThan(leftInTotal)) throw AppError.conflict(`the credit of ${format(net.plus(tax))} ${currency} exceeds what is left to credit on the invoice: ${format(max(leftInTotal, zero))} ${currency}`);
  }
  for (const window of windows) {
    const inWindow = lines.filter((line) => window.itemIds.includes(line.invoiceItemId));
    const asked = inWindow.reduce((sum, line) => sum.plus(line.amount), zero);
    if (inWindow.length > 1 && asked.greaterThan(window.left)) {
      throw AppError.conflict(`items ${inWindow.map((line) => `"${line.title}"`).join(', ')}: ${format(asked)} ${currency} exceeds what is left to credit on their usage window, ${format(max(toDecimal(window.left), zero))} ${currency}`);
    }
  }
  if (net.plus(tax).lessThanOrEqualTo(0)) throw AppError.validation('the credit note credits nothing', 'body');
  return { lines, subtotal: format(net), taxTotal: format(tax), total: format(net.plus(tax)) };
}
