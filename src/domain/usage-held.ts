import type { DimensionValues } from './dimensional-prices';
import { Decimal, toDecimal } from './money';

/**
 * What a usage window's charges still hold for the customer: what they charged, less their share of the
 * coupon discounts and less what credit notes gave back of the lines that made them. A correction that
 * gives usage back never gives back more than that, and a credit note on a usage line never credits more,
 * so that a window is never given back twice, by a note and by a correction. Pure: callers read the
 * ledger and the notes.
 */

/** A usage charge of the ledger, with the invoice that made it and its share of the discounts. */
export interface LedgerUsageCharge {
  invoiceId: string;
  planItemId: string;
  from: string;
  to: string;
  /** The price entry it charged (an item priced per dimension value); null otherwise. */
  dimensionsKey: string | null;
  amount: string;
  /** Its share of the coupon discounts; absent where the ledger predates discount shares (none then). */
  discount?: string;
}

/** What credit notes (not voided) credited of one invoice line, with the line's plan item, days and values. */
export interface NotedLine {
  invoiceId: string;
  planItemId: string | null;
  from: string | null;
  to: string | null;
  dimensions: DimensionValues | null;
  amount: string;
}

/** How many values of the entry's key the line carries when it carries them all (`{}`: 0, in every line); null when it does not. */
function within(key: string, dimensions: DimensionValues | null): number | null {
  const entry = JSON.parse(key) as DimensionValues;
  const keys = Object.keys(entry);
  if (keys.some((name) => dimensions === null || !(name in dimensions) || dimensions[name] !== entry[name])) return null;
  return keys.length;
}

/**
 * The charge a noted line belongs to: the usage charge its own invoice made for the same plan item and
 * days; for an item priced per dimension value, the entry whose values the line carries, naming the most
 * of them (a line split by presentation values carries its entry's values too). -1 when none is.
 */
export function chargeOfLine(charges: readonly LedgerUsageCharge[], line: NotedLine): number {
  let best = -1;
  let bestKeys = -1;
  charges.forEach((charge, index) => {
    if (charge.invoiceId !== line.invoiceId || charge.planItemId !== line.planItemId || charge.from !== line.from || charge.to !== line.to) return;
    const keys = charge.dimensionsKey === null ? (line.dimensions === null ? 0 : null) : within(charge.dimensionsKey, line.dimensions);
    if (keys !== null && keys > bestKeys) [best, bestKeys] = [index, keys];
  });
  return best;
}

/**
 * Per charge (by index): its amount less its discount share and less what notes gave back of its lines.
 * A charge of a cancelled invoice holds nothing: the customer does not owe what it charged, nor was given
 * what it gave back (its charges stay in the ledger, so that its usage is not charged again).
 */
export function heldByCharge(charges: readonly LedgerUsageCharge[], noted: readonly NotedLine[], cancelled: ReadonlySet<string> = new Set()): Decimal[] {
  const held = charges.map((charge) => (cancelled.has(charge.invoiceId) ? new Decimal(0) : toDecimal(charge.amount).minus(charge.discount ?? 0)));
  for (const line of noted) {
    const index = chargeOfLine(charges, line);
    if (index >= 0) held[index] = held[index]!.minus(line.amount);
  }
  return held;
}

/**
 * The charges of the window a charge belongs to: the same plan item and price entry, over days that meet
 * its own (a window that grew since, an end moved later, holds the earlier charge's days).
 */
export function windowOf(charges: readonly LedgerUsageCharge[], index: number): number[] {
  const charge = charges[index]!;
  const windows: number[] = [];
  charges.forEach((other, i) => {
    if (other.planItemId === charge.planItemId && other.dimensionsKey === charge.dimensionsKey && other.from <= charge.to && other.to >= charge.from) windows.push(i);
  });
  return windows;
}

/** What the window's charges hold together, never below nothing. */
export function heldInWindow(held: readonly Decimal[], window: readonly number[]): Decimal {
  return Decimal.max(
    window.reduce((sum, index) => sum.plus(held[index]!), new Decimal(0)),
    0,
  );
}
