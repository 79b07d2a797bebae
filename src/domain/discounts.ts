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

/** A line of an invoice as credits read it: a coupon's discount line names the coupon and the days it discounted. */
export interface InvoiceLine extends PricedLine {
  id: string;
  couponId: string | null;
  fromDate: string | null;
  toDate: string | null;
}

/**
 * What each line that charged something (neither a discount line nor negative) charged net of its
 * discounts. A coupon's line took its discount off the lines of its plan item within its days, in
 * proportion to their amounts, so its amount is shared over them that way (largest remainder: the
 * shares add up to the discount exactly, and a plan item's lines to what it charged after discounts).
 */
export function netOfDiscounts(lines: readonly InvoiceLine[], currency: string): Map<string, Decimal> {
  const charged = lines.filter((line) => line.couponId === null && toDecimal(line.amount).greaterThan(0));
  const net = new Map(charged.map((line) => [line.id, toDecimal(line.amount)]));
  for (const discount of lines.filter((line) => line.couponId !== null && line.fromDate !== null && line.toDate !== null)) {
    const covered = charged.filter((line) => line.planItemId === discount.planItemId && line.fromDate !== null && line.toDate !== null && line.fromDate >= discount.fromDate! && line.toDate <= discount.toDate!);
    const whole = covered.reduce((sum, line) => sum.plus(line.amount), new Decimal(0));
    if (whole.isZero()) continue;
    const shares = allocate(
      Decimal.min(toDecimal(discount.amount).negated(), whole),
      covered.map((line) => toDecimal(line.amount)),
      currency,
    );
    covered.forEach((line, i) => net.set(line.id, net.get(line.id)!.minus(shares[i]!)));
  }
  return net;
}
