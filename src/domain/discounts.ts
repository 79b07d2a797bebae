import { allocate, Decimal, formatAmount, roundToMinor, toDecimal } from './money';

/** A coupon as invoice runs apply it. */
export interface Coupon {
  code: string;
  /** Exactly one of the two: a percentage (0 < p ≤ 100) of each line, or an amount in `currency`. */
  percentOff: string | null;
  amountOff: string | null;
  currency: string | null;
  duration: 'once' | 'repeating' | 'forever';
  /** For `repeating`: how many billing periods it serves. */
  durationPeriods: number | null;
}

/** Whether a coupon that has served `periodsUsed` periods of a contract serves one more. */
export function servesAnotherPeriod(coupon: Pick<Coupon, 'duration' | 'durationPeriods'>, periodsUsed: number): boolean {
  if (coupon.duration === 'forever') return true;
  if (coupon.duration === 'once') return periodsUsed < 1;
  return periodsUsed < (coupon.durationPeriods ?? 0);
}

/** A priced line of an invoice: its plan item and its amount (quantity × price, rounded). */
export interface PricedLine {
  planItemId: string | null;
  amount: string;
}

/** The discount a coupon gives on the lines of one plan item, as a positive amount. */
export interface Discount {
  planItemId: string | null;
  amount: string;
}

/**
 * What a coupon takes off an invoice's lines, one discount per plan item so that taxes limited to some
 * plan items see their own items' discounted amount. A percentage comes off each plan item's lines
 * (rounded half-up to the minor unit); an amount is shared over them in proportion to their amounts,
 * never more than they add up to, and only in its own currency. Lines that are already negative (other
 * discounts, credits) are left alone. `amountLeft` is what remains of an amount coupon for this period
 * when it already served other invoices of the contract in the same run.
 */
export function discountsOf(lines: readonly PricedLine[], coupon: Coupon, currency: string, amountLeft?: string): Discount[] {
  const groups = new Map<string | null, Decimal>();
  for (const line of lines) groups.set(line.planItemId, (groups.get(line.planItemId) ?? new Decimal(0)).plus(line.amount));
  const positive = [...groups].filter(([, amount]) => amount.greaterThan(0));
  if (positive.length === 0) return [];
  let amounts: Decimal[];
  if (coupon.percentOff !== null) {
    amounts = positive.map(([, amount]) => roundToMinor(amount.times(coupon.percentOff!).dividedBy(100), currency));
  } else {
    if (coupon.currency !== currency) return [];
    const whole = positive.reduce((sum, [, amount]) => sum.plus(amount), new Decimal(0));
    const budget = Decimal.min(toDecimal(amountLeft ?? coupon.amountOff!), whole);
    if (budget.lessThanOrEqualTo(0)) return [];
    amounts = allocate(
      budget,
      positive.map(([, amount]) => amount),
      currency,
    );
  }
  return positive
    .map(([planItemId], i) => ({ planItemId, amount: formatAmount(amounts[i]!, currency) }))
    .filter((discount) => toDecimal(discount.amount).greaterThan(0));
}
