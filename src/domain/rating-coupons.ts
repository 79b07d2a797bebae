/**
 * The rating engine's discounts: what the contract's coupons take off the lines a document charges
 * (docs/adjustments.md, "Coupons").
 */
import { discountsOf, type Coupon } from './discounts';
import { allocate, Decimal, formatAmount, roundToMinor, sumAmounts, toDecimal } from './money';
import type { Charge } from './rating';

/** A coupon applied to a contract: `periodsUsed` counts every period it served on the contract. */
export interface ContractCoupon {
  /** The contract coupon's own id, which the periods it serves are counted on. */
  id: string;
  couponId: string;
  coupon: Coupon;
  periodsUsed: number;
  /**
   * Its discount lines on the contract's earlier documents, by plan item and days: the periods it served
   * there are those their days meet. Absent: none.
   */
  discounted?: ReadonlyArray<{ planItemId: string | null; fromDate: string; toDate: string }>;
}

/**
 * A plan item's billing period on a contract plan, as `billedPeriods` names it: a plan changed to the same
 * plan is a new contract plan, whose periods are its own.
 */
export const billedPeriodKey = (contractPlanId: string | undefined, planItemId: string | null | undefined, period: { from: string; to: string }) =>
  `${contractPlanId ?? ''} ${planItemId ?? ''} ${period.from} ${period.to}`;

/** A priced line as coupons see it. */
export interface DiscountableLine {
  planItemId?: string | null;
  quantity: string;
  price: string;
  fromDate: string;
  toDate: string;
}

/** A document's priced lines, each with the charges it made (the first `charges.length` lines). */
export interface DiscountableInvoice {
  /** The contract plan it bills: where its periods were billed before. */
  contractPlanId?: string;
  currency: string;
  items: readonly DiscountableLine[];
  charges: ReadonlyArray<readonly Charge[]>;
}

/** A discount line for one plan item, for the invoice at `invoiceIndex`. */
export interface DiscountLine {
  invoiceIndex: number;
  planItemId: string | undefined;
  title: string;
  description: string;
  quantity: '1';
  price: string;
  fromDate: string;
  toDate: string;
  couponId: string;
}

const earliest = (days: string[]) => days.reduce((a, b) => (b < a ? b : a));
const latest = (days: string[]) => days.reduce((a, b) => (b > a ? b : a));

/** How many more billing periods a coupon serves after `periodsUsed`. */
function periodsLeft(coupon: Coupon, periodsUsed: number): number {
  if (coupon.duration === 'forever') return Number.POSITIVE_INFINITY;
  return Math.max(0, (coupon.duration === 'once' ? 1 : (coupon.durationPeriods ?? 0)) - periodsUsed);
}

/**
 * The contract's coupons take their discount off the documents priced for it, one discount line per plan
 * item (so that a tax limited to some plan items sees its own items discounted). A coupon serves a number
 * of billing periods: of each plan item, only the lines of its first periods still to serve are
 * discounted (a run that catches up three months of a fee with a `once` coupon discounts the first), and
 * the coupon has served as many periods as the item that took the most. A percentage comes off those
 * lines; an amount, once per period served, is shared over them, invoice after invoice. Coupons stack in
 * the order they were applied, and together never take more off a plan item's lines than they charged: each
 * takes at most what the coupons before it left on the lines it discounts, wherever else they took theirs
 * (50 % off January and February leaves half of January to an amount coupon that serves January alone).
 *
 * A line of a period an earlier document already billed for its plan item (`billedPeriods`: late usage, a
 * give-back, a suspension's days) is a correction, never a period still to serve: it carries the discount
 * its period carried. A percentage coupon that served that period discounts it as it discounted the
 * period (so a give-back there lowers what it takes off); any other coupon leaves it alone, as every coupon
 * leaves a usage correction that states no units (it settles amounts already net of the discount).
 * Answers the discount lines and how many periods each contract coupon served.
 */
export function couponDiscounts(
  invoices: readonly DiscountableInvoice[],
  coupons: readonly ContractCoupon[],
  billedPeriods: ReadonlySet<string> = new Set(),
): { lines: DiscountLine[]; served: Array<{ id: string; periods: number }> } {
  const served: Array<{ id: string; periods: number }> = [];
  const made: DiscountLine[] = [];
  // What each priced line of each invoice has left once the coupons before took their discount off it: a
  // later coupon takes at most what is left on the lines it discounts, whatever the others took elsewhere.
  const lineLeft = invoices.map(() => new Map<DiscountableLine, Decimal>());
  for (const { id, couponId, coupon, periodsUsed, discounted = [] } of coupons) {
    const left = periodsLeft(coupon, periodsUsed);
    const servedEarlier = (planItemId: string | null | undefined, period: { from: string; to: string }) =>
      coupon.percentOff !== null && discounted.some((line) => line.planItemId === (planItemId ?? null) && line.fromDate <= period.to && line.toDate >= period.from);
    // Each invoice's priced lines, and which of them fall in their plan item's first periods still to serve.
    let periods = 0;
    const eligible = invoices.map((invoice) => {
      // A period is its first and last day: after a change of billing period, a year and the quarter
      // before it may start on the same day and are still two periods. An item's periods come in the
      // order of the first day charged in each: a month cut short by a change to quarterly comes before
      // the quarter that began on an earlier day but is charged only from the change.
      // A line split off by presentation values carries no charges: the part before it, of its plan item,
      // carries the entry's, and the split line is of that period. A line with no charges and no such part
      // before it is of no period the coupon serves.
      const lines: Array<{ line: DiscountableLine; period: { from: string; to: string }; firstDay: string; correction: boolean; settlesAmounts: boolean }> = [];
      invoice.charges.forEach((charges, index) => {
        const line = invoice.items[index]!;
        if (charges.length > 0) {
          const period = charges[0]!.period;
          const correction = billedPeriods.has(billedPeriodKey(invoice.contractPlanId, line.planItemId, period));
          // A usage correction that states no units settles amounts: what its window still held, net of the
          // discount it had (`cappedGiveBack`), or what it rates beyond what its charges add up to. It is
          // already net of the period's discount, and no coupon discounts it again.
          const settlesAmounts = correction && charges.every((charge) => charge.kind === 'usage' && charge.quantity === null);
          lines.push({ line, period, firstDay: earliest(charges.map((charge) => charge.from)), correction, settlesAmounts });
          return;
        }
        const part = lines.at(-1);
        if (part && index > 0 && part.line === invoice.items[index - 1] && part.line.planItemId === line.planItemId) lines.push({ ...part, line });
      });
      const firstDays = new Map<string | null | undefined, Map<string, string>>();
      for (const { line, period, firstDay, correction } of lines) {
        if (correction) continue;
        const ofItem = firstDays.get(line.planItemId) ?? new Map<string, string>();
        const key = `${period.from} ${period.to}`;
        const known = ofItem.get(key);
        ofItem.set(key, known === undefined || firstDay < known ? firstDay : known);
        firstDays.set(line.planItemId, ofItem);
      }
      const periodsOf = new Map<string | null | undefined, string[]>();
      for (const [item, ofItem] of firstDays) periodsOf.set(item, [...ofItem].sort(([a, aDay], [b, bDay]) => (aDay === bDay ? (a < b ? -1 : 1) : aDay < bDay ? -1 : 1)).map(([period]) => period));
      for (const itemPeriods of periodsOf.values()) periods = Math.max(periods, Math.min(itemPeriods.length, left));
      return lines.filter(({ line, period, correction, settlesAmounts }) =>
        correction ? !settlesAmounts && servedEarlier(line.planItemId, period) : periodsOf.get(line.planItemId)!.indexOf(`${period.from} ${period.to}`) < left,
      );
    });
    const madeBefore = made.length;
    // The periods served count only when the coupon took something off a plan item that one of them
    // charges: a month of no usage (a 0.00 line) leaves a `once` coupon for the next one, even beside a
    // correction the coupon discounts.
    let tookOffAPeriod = false;
    let amountLeft = coupon.amountOff === null ? undefined : toDecimal(coupon.amountOff).times(periods).toFixed();
    invoices.forEach((invoice, invoiceIndex) => {
      const entries = eligible[invoiceIndex]!;
      const lines = entries.map(({ line }) => line);
      const amountOf = (line: DiscountableLine) => roundToMinor(toDecimal(line.quantity).times(line.price), invoice.currency);
      const priced = lines.map((line) => ({ planItemId: line.planItemId ?? null, amount: amountOf(line).toFixed() }));
      const left = lineLeft[invoiceIndex]!;
      const leftOf = (line: DiscountableLine) => left.get(line) ?? amountOf(line);
      const discounts = discountsOf(priced, coupon, invoice.currency, amountLeft).flatMap((discount) => {
        const ofItem = lines.filter((line) => (line.planItemId ?? null) === discount.planItemId);
        const amount = Decimal.min(toDecimal(discount.amount), Decimal.max(0, sumAmounts(ofItem.map(leftOf))));
        if (amount.lessThanOrEqualTo(0)) return [];
        takeOffLines(amount, ofItem, leftOf, (line, rest) => left.set(line, rest), invoice.currency);
        const charging = (line: DiscountableLine) => amountOf(line).greaterThan(0);
        if (entries.some(({ line, correction }) => !correction && (line.planItemId ?? null) === discount.planItemId && charging(line))) tookOffAPeriod = true;
        return [{ planItemId: discount.planItemId, amount: formatAmount(amount, invoice.currency) }];
      });
      const what = coupon.percentOff !== null ? `${toDecimal(coupon.percentOff).toFixed()} % off` : `${formatAmount(coupon.amountOff!, invoice.currency)} ${invoice.currency} off`;
      for (const discount of discounts) {
        const of = lines.filter((line) => (line.planItemId ?? null) === discount.planItemId);
        made.push({
          invoiceIndex,
          planItemId: discount.planItemId ?? undefined,
          title: `Coupon ${coupon.code}`,
          description: what,
          quantity: '1',
          price: toDecimal(discount.amount).negated().toFixed(),
          fromDate: earliest(of.map((line) => line.fromDate)),
          toDate: latest(of.map((line) => line.toDate)),
          couponId,
        });
      }
      if (amountLeft !== undefined) amountLeft = toDecimal(amountLeft).minus(discounts.reduce((sum, discount) => sum.plus(discount.amount), new Decimal(0))).toFixed();
    });
    if (made.length > madeBefore && tookOffAPeriod && periods > 0) served.push({ id, periods });
  }
  return { lines: made, served };
}

/**
 * A discount taken off `lines`: shared over those with something left, in proportion to what each has left
 * (largest remainder, in minor units), so that a later discount of some of them finds what this one left.
 * `amount` is at most what they have left together.
 */
function takeOffLines<Line>(amount: Decimal, lines: readonly Line[], leftOf: (line: Line) => Decimal, setLeft: (line: Line, left: Decimal) => void, currency: string): void {
  const charging = lines.filter((line) => leftOf(line).greaterThan(0));
  if (charging.length === 0) return;
  const shares = allocate(amount, charging.map(leftOf), currency);
  charging.forEach((line, i) => setLeft(line, leftOf(line).minus(shares[i]!)));
}

/** A document's coupon lines as discounts: positive amounts over their plan item and days, with the line's id where it has one. */
export function discountLinesOf<Id extends string | undefined = undefined>(
  lines: ReadonlyArray<{ id?: Id; couponId?: string | null; planItemId?: string | null; quantity: string | number; price: string | number; fromDate?: string | null; toDate?: string | null }>,
): Array<{ id: Id; couponId: string; planItemId: string | null | undefined; fromDate: string; toDate: string; amount: string }> {
  return lines.flatMap((line) =>
    line.couponId && line.fromDate && line.toDate
      ? [{ id: line.id as Id, couponId: line.couponId, planItemId: line.planItemId, fromDate: line.fromDate, toDate: line.toDate, amount: toDecimal(line.price).times(line.quantity).negated().toFixed() }]
      : [],
  );
}

/**
 * The discount lines a re-priced draft keeps, each cut to what its plan item's priced lines within its days
 * now charge, less what the discount lines before it kept of those lines (a discount line is shared over its
 * lines in proportion to what each had left): the amount each keeps, by line id (0
 * where nothing is left to discount, and the line goes). A percentage coupon's line (`percentOff`, by
 * coupon id) is that percentage of those lines again, rounded half-up, whether they now charge less or
 * more; an amount coupon's keeps at most what it took. A draft whose days were priced away keeps no
 * discount of them, and never goes below zero by its discounts.
 */
export function discountsKept(
  priced: ReadonlyArray<{ planItemId?: string | null; fromDate?: string | null; toDate?: string | null; quantity: string | number; price: string | number }>,
  discounts: ReadonlyArray<{ id: string; couponId?: string; planItemId?: string | null; fromDate: string; toDate: string; amount: string }>,
  currency: string,
  percentOff: ReadonlyMap<string, string | null> = new Map(),
): Map<string, Decimal> {
  const amountOf = (index: number) => roundToMinor(toDecimal(priced[index]!.quantity).times(priced[index]!.price), currency);
  // What each priced line (by index) has left once the discounts before took theirs off it.
  const lineLeft = new Map<number, Decimal>();
  const leftOf = (index: number) => lineLeft.get(index) ?? amountOf(index);
  const kept = new Map<string, Decimal>();
  for (const discount of discounts) {
    const item = discount.planItemId ?? null;
    const within = priced.flatMap((line, index) =>
      (line.planItemId ?? null) === item && line.fromDate && line.toDate && line.fromDate >= discount.fromDate && line.toDate <= discount.toDate ? [index] : [],
    );
    const gross = sumAmounts(within.map(amountOf));
    const percent = discount.couponId === undefined ? undefined : percentOff.get(discount.couponId);
    const wanted = percent === undefined || percent === null ? toDecimal(discount.amount) : roundToMinor(Decimal.max(0, gross).times(percent).dividedBy(100), currency);
    const amount = Decimal.max(0, Decimal.min(wanted, sumAmounts(within.map(leftOf))));
    takeOffLines(amount, within, leftOf, (index, left) => lineLeft.set(index, left), currency);
    kept.set(discount.id, amount);
  }
  return kept;
}
