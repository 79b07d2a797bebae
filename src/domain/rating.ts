/**
 * The rating engine: what a contract plan owes on a billing date, from its terms as they stood each day,
 * its usage and the charge ledger (what earlier documents already charged). Runs, dry runs, the upcoming
 * invoice and `sync-items` all price their lines here; nothing else prices a plan item
 * (docs/billing-runs.md, "How a charge is computed").
 *
 * - A plan's billing period is a list of versions, each in force from its first day. A day belongs to the
 *   period that holds it under the version in force that day; a period cut by a change keeps its whole
 *   length for proration.
 * - A plan item is in force from `effectiveFrom` through `effectiveTo` (null: open on that side).
 * - A fee is charged per day: the days of a period not yet in the ledger, in runs that no suspension
 *   covers, each run the difference of `fee × days since the period's start / days in the period`
 *   (rounded half-up to the minor unit) at its two ends, so that the runs of one period always add up to
 *   the rounded whole, however the period was billed.
 * - Usage is charged per window (a period's days within the item's and the plan's): the first charge
 *   rates the window's usage; usage that arrives later is charged as a delta on the next document.
 *
 * Every date is a calendar day `YYYY-MM-DD` in the organisation's time zone; ranges include both ends.
 */
import {
  billingTimingOf,
  fullFee,
  isoOf,
  parseDay,
  parseSuspensions,
  periodsBetween,
  shareInMinorUnits,
  unsuspendedRuns,
  type BillableItem,
  type BillingAnchor,
  type BillingPeriodKind,
  type DayRange,
  type Days,
  type Suspension,
} from './billing-periods';
import { currencyMinorUnits } from './currencies';
import { AppError } from './errors';
import { allocate, Decimal, formatAmount, roundToMinor, toDecimal } from './money';
import { priceItem, type PricedPlanItem } from './pricing';
import { describeValues, dimensionalProblems, dimensionsKey, FOLDS, foldUsage, lineFigures, shareByQuantity, type Combination, type DimensionalTerms, type DimensionValues, type EntryUsage } from './dimensional-prices';

/** One plan item as it stands over a span of days. */
export interface RatedItem extends BillableItem, DimensionalTerms {
  name: string;
  /** The first day in force; null: from the first day of any contract plan. */
  effectiveFrom: string | null;
  /** The last day in force; null: open-ended. */
  effectiveTo: string | null;
}

/** A plan's billing period from a day on (null: the first version, in force from the start). */
export interface PeriodVersion {
  effectiveFrom: string | null;
  billingPeriod: BillingPeriodKind;
}

/** A contract plan's terms over time. */
export interface RatingTerms {
  currency: string;
  anchor: BillingAnchor;
  /** The contract plan's first day: anniversary periods repeat from it; a one-time plan's only day. */
  startDate: string;
  /** The last day served: the earliest of the contract plan's and the contract's ends; null: open-ended. */
  endDate: string | null;
  periods: readonly PeriodVersion[];
  items: readonly RatedItem[];
  suspensions: readonly Suspension[];
}

/** A fee's run of days already charged. */
export interface FeeCharged {
  planItemId: string;
  from: string;
  to: string;
  amount?: string;
}

/** A usage charge already made for a window: the units it charged (null: not stated) and its amount. */
export interface UsageCharged {
  planItemId: string;
  from: string;
  to: string;
  quantity: string | null;
  amount: string;
  /** An item with prices per dimension value: the price entry charged (`dimensionsKey`); else absent or null. */
  dimensionsKey?: string | null;
  /**
   * What it still holds for the customer: its amount less its share of the discounts and less what credit
   * notes gave back of its line (`usage-held.ts`). Absent: the ledger does not say, and nothing is capped.
   */
  held?: string;
}

export interface ChargeLedger {
  fees: readonly FeeCharged[];
  usage: readonly UsageCharged[];
}

/** An invoice line as the engine prices it: `quantity × price`, rounded half-up to the minor unit, is its amount. */
export interface RatedLine {
  planItemId: string;
  title: string;
  description: string;
  quantity: string;
  price: string;
  fromDate: string;
  toDate: string;
  /** A line of an item with prices per dimension value: the dimension values it charges for. */
  dimensions?: Record<string, string | null>;
}

/** What a line charges, for the ledger: a fee's runs of days, or a usage window's units. */
export interface Charge {
  kind: 'fee' | 'usage';
  planItemId: string;
  from: string;
  to: string;
  period: DayRange;
  quantity: string | null;
  amount: string;
  /** Its share of the discount lines on its plan item (positive); absent: none. */
  discount?: string;
  /** An item with prices per dimension value: the price entry it charges (`dimensionsKey`). */
  dimensionsKey?: string;
}

export interface RatedCharge {
  line: RatedLine;
  charges: Charge[];
}

/** A usage window whose aggregate the caller reads, for `rateUsage`. */
export interface UsageWindow {
  planItemId: string;
  meterId: string;
  /** The whole period the window belongs to. */
  period: DayRange;
  from: string;
  to: string;
}

interface PeriodSpan {
  kind: BillingPeriodKind;
  /** The whole period, for proration. */
  whole: Days;
  /** Its days that the version in force and the contract plan serve. */
  days: Days;
}

const OPEN = Number.POSITIVE_INFINITY;

const intersect = (a: Days, b: Days): Days | null => {
  const from = Math.max(a.from, b.from);
  const to = Math.min(a.to, b.to);
  return from <= to ? { from, to } : null;
};

/** The runs of `runs` not covered by `taken` (both sorted by start; `taken` may overlap). */
function without(runs: readonly Days[], taken: readonly Days[]): Days[] {
  const left: Days[] = [];
  for (const run of runs) {
    let cursor = run.from;
    for (const span of taken) {
      if (span.to < cursor || span.from > run.to) continue;
      if (span.from > cursor) left.push({ from: cursor, to: span.from - 1 });
      cursor = Math.max(cursor, span.to + 1);
      if (cursor > run.to) break;
    }
    if (cursor <= run.to) left.push({ from: cursor, to: run.to });
  }
  return left;
}

const dayOrNull = (value: string | null, field: string, otherwise: number) => (value === null ? otherwise : parseDay(value, field));

/** The contract plan's days: from its start through its end. */
function planDays(terms: RatingTerms): Days | null {
  const from = parseDay(terms.startDate, 'startDate');
  const to = dayOrNull(terms.endDate, 'endDate', OPEN);
  return from <= to ? { from, to } : null;
}

/**
 * The periods that hold a day of the contract plan through `last`, each with the days of it that the
 * billing-period version in force serves. Versions are read in order of their first day.
 */
function periodSpans(terms: RatingTerms, last: number): PeriodSpan[] {
  const plan = planDays(terms);
  if (!plan || terms.periods.length === 0) return [];
  const anchor = plan.from;
  const versions = [...terms.periods].sort((a, b) => (a.effectiveFrom ?? '') < (b.effectiveFrom ?? '') ? -1 : 1);
  const spans: PeriodSpan[] = [];
  versions.forEach((version, i) => {
    const next = versions[i + 1];
    const served = intersect(plan, { from: dayOrNull(version.effectiveFrom, 'effectiveFrom', -OPEN), to: next ? parseDay(next.effectiveFrom!, 'effectiveFrom') - 1 : OPEN });
    if (!served) return;
    const reach = Math.min(served.to, last);
    if (reach < served.from) return;
    for (const whole of periodsBetween(version.billingPeriod, terms.anchor, anchor, { from: served.from, to: reach })) {
      const days = intersect(whole, served);
      if (days) spans.push({ kind: version.billingPeriod, whole, days });
    }
  });
  return spans;
}

/** The days an item version is in force. */
const itemDays = (item: RatedItem): Days => ({ from: dayOrNull(item.effectiveFrom, `items.${item.id}.effectiveFrom`, -OPEN), to: dayOrNull(item.effectiveTo, `items.${item.id}.effectiveTo`, OPEN) });

const ledgerDays = (charged: ReadonlyArray<{ from: string; to: string }>) => charged.map((span) => ({ from: parseDay(span.from, 'ledger.from'), to: parseDay(span.to, 'ledger.to') })).sort((a, b) => a.from - b.from);

const range = (days: Days): DayRange => ({ from: isoOf(days.from), to: isoOf(days.to) });

/**
 * The fees due on `billingDate`: for each fee item in force, the days of each period not yet in the
 * ledger, once the period is due (in advance: its first day served has come; in arrears: its last day
 * served has passed). One line per item and period, priced by the telescoping proration; a one-time fee
 * is its whole amount once.
 */
export function feesDue(terms: RatingTerms, ledger: ChargeLedger, billingDate: string): RatedCharge[] {
  const date = parseDay(billingDate, 'billingDate');
  const suspended = parseSuspensions(terms.suspensions);
  const minor = currencyMinorUnits(terms.currency);
  const spans = periodSpans(terms, date);
  const due: RatedCharge[] = [];
  for (const item of terms.items) {
    if (item.meterId) continue;
    const timing = billingTimingOf(item);
    const inForce = itemDays(item);
    const charged = ledgerDays(ledger.fees.filter((fee) => fee.planItemId === item.id));
    const fee = fullFee(item, terms.currency);
    for (const span of spans) {
      const days = intersect(span.days, inForce);
      if (!days) continue;
      if (timing === 'in_advance' ? days.from > date : days.to > date - 1) continue;
      const oneTime = span.kind === 'one_time';
      const runs = without(oneTime ? [days] : unsuspendedRuns(days, suspended), charged);
      if (runs.length === 0) continue;
      const periodDays = span.whole.to - span.whole.from + 1;
      const through = (day: number) => shareInMinorUnits(fee, day - span.whole.from + 1, periodDays, minor);
      const charges: Charge[] = runs.map((run) => {
        const minorUnits = oneTime ? BigInt(fee.times(new Decimal(10).pow(minor)).toFixed(0)) : through(run.to) - through(run.from - 1);
        return {
          kind: 'fee',
          planItemId: item.id,
          ...range(run),
          period: range(span.whole),
          quantity: null,
          amount: new Decimal(minorUnits.toString()).times(new Decimal(10).pow(-minor)).toFixed(minor),
        };
      });
      const amount = charges.reduce((sum, charge) => sum.plus(charge.amount), new Decimal(0));
      const count = runs.reduce((sum, run) => sum + run.to - run.from + 1, 0);
      const first = charges[0]!.from;
      const lastDay = charges[charges.length - 1]!.to;
      const prorated = oneTime || count === periodDays ? '' : ` (${count} of ${periodDays} days)`;
      // An item of several units (10 seats) shows them, at the price per unit that gives the amount exactly.
      const figures = item.quantity == null ? { quantity: '1', price: amount.toFixed(minor) } : lineFigures(toDecimal(item.quantity), amount, terms.currency);
      due.push({
        line: { planItemId: item.id, title: item.name, description: `${first} to ${lastDay}${prorated}`, quantity: figures.quantity, price: figures.price, fromDate: first, toDate: lastDay },
        charges,
      });
    }
  }
  return due;
}

/**
 * The usage windows whose usage is due on `billingDate`: every window of a metered item in force whose
 * last day has passed, charged or not. A window already charged is read again so that usage that arrived
 * since is charged as a delta (`rateUsage`).
 */
export function usageWindows(terms: RatingTerms, billingDate: string): UsageWindow[] {
  const date = parseDay(billingDate, 'billingDate');
  const windows: UsageWindow[] = [];
  const spans = periodSpans(terms, date - 1);
  for (const item of terms.items) {
    if (!item.meterId) continue;
    if (billingTimingOf(item) === 'in_advance') throw AppError.validation(`plan item ${item.id} has a meter: its usage can only be billed in arrears`);
    const inForce = itemDays(item);
    for (const span of spans) {
      const days = intersect(span.days, inForce);
      if (!days || days.to > date - 1) continue;
      windows.push({ planItemId: item.id, meterId: item.meterId, period: range(span.whole), ...range(days) });
    }
  }
  return windows;
}

/**
 * The billing period that holds `date`, and the usage windows of its metered items in force (the period's
 * days within the item's and the plan's), ended or not: what the period's usage charges rest on so far,
 * for period-to-date usage and progressive billing. A window charged before the period ends is charged
 * again as a delta by `rateUsage` when the period's invoice rates it whole. Null when no period of the
 * contract plan holds the day.
 */
export function periodUsageWindows(terms: RatingTerms, date: string): { period: DayRange; windows: UsageWindow[] } | null {
  const day = parseDay(date, 'date');
  const span = periodSpans(terms, day).filter((candidate) => candidate.whole.from <= day && day <= candidate.whole.to).at(-1);
  if (!span) return null;
  const windows: UsageWindow[] = [];
  for (const item of terms.items) {
    if (!item.meterId) continue;
    if (billingTimingOf(item) === 'in_advance') throw AppError.validation(`plan item ${item.id} has a meter: its usage can only be billed in arrears`);
    const days = intersect(span.days, itemDays(item));
    if (days) windows.push({ planItemId: item.id, meterId: item.meterId, period: range(span.whole), ...range(days) });
  }
  return { period: range(span.whole), windows };
}

/**
 * Each discount line (a coupon's, on a plan item over a span of days) shared over the charges of that
 * item within its days, in proportion to their amounts, so that the ledger says at what net each day was
 * charged. The shares of a discount add up to it exactly.
 */
export function shareDiscounts(charges: readonly Charge[], discounts: ReadonlyArray<{ planItemId?: string | null; fromDate: string; toDate: string; amount: string }>, currency: string): Charge[] {
  const shared = charges.map((charge) => ({ ...charge }));
  for (const discount of discounts) {
    const covered = shared.filter((charge) => charge.planItemId === discount.planItemId && charge.from >= discount.fromDate && charge.to <= discount.toDate && toDecimal(charge.amount).greaterThan(0));
    if (covered.length === 0) continue;
    const shares = allocate(toDecimal(discount.amount), covered.map((charge) => toDecimal(charge.amount)), currency);
    covered.forEach((charge, i) => (charge.discount = formatAmount(toDecimal(charge.discount ?? 0).plus(shares[i]!), currency)));
  }
  return shared;
}

/**
 * A charge's tax: for each tax that applies to its plan item (`appliesTo`: all, or the plan items named),
 * its rate on the charge's net (amount less discount), rounded half-up to the minor unit. An invoice
 * rounds once per tax line, so the charges' taxes may differ from it by a minor unit each.
 */
export function chargeTax(charge: Pick<Charge, 'planItemId' | 'amount' | 'discount'>, taxes: ReadonlyArray<{ rate: string; appliesTo: 'all' | readonly string[] }>, currency: string): string {
  const net = toDecimal(charge.amount).minus(charge.discount ?? 0);
  const tax = taxes
    .filter((candidate) => candidate.appliesTo === 'all' || candidate.appliesTo.includes(charge.planItemId))
    .reduce((sum, candidate) => sum.plus(roundToMinor(net.times(candidate.rate).dividedBy(100), currency)), new Decimal(0));
  return formatAmount(tax, currency);
}

/**
 * An invoice line for a plan item rated at a quantity: a per-unit item shows the quantity and its unit
 * price; any other shows its priced amount once. The description keeps the rating, one part per tier.
 */
export function ratedLine(item: PricedPlanItem & { id: string; name: string }, quantity: Decimal, currency: string): Omit<RatedLine, 'fromDate' | 'toDate'> {
  const price = priceItem(item, quantity.toFixed(), currency);
  const perUnit = item.pricingModel === 'per_unit';
  return {
    planItemId: item.id,
    title: item.name,
    description: price.lines.map((line) => `${line.description}: ${line.quantity} × ${line.unitPrice}`).join('; '),
    quantity: perUnit ? quantity.toFixed() : '1',
    price: perUnit ? toDecimal(item.unitPrice!).toFixed() : price.amount,
  };
}

/** A milestone's charge for a percentage of its plan item: of the item's price for its own quantity. */
export function milestoneCharge(item: PricedPlanItem, currency: string, milestone: { percentage: string | null }): string {
  const price = priceItem(item, item.quantity ?? 1, currency);
  return formatAmount(toDecimal(price.amount).times(milestone.percentage!).dividedBy(100), currency);
}

/**
 * A correction that gives back more than the window's charges still hold (credit notes gave some of it back,
 * a coupon took its share) gives back what they hold, no more: `amount` capped, or null when it is not
 * capped. Null too when the ledger does not say what they hold.
 */
function cappedGiveBack(charged: readonly UsageCharged[], amount: Decimal): Decimal | null {
  if (!amount.isNegative() || charged.some((usage) => usage.held === undefined)) return null;
  const held = Decimal.max(
    charged.reduce((sum, usage) => sum.plus(usage.held!), new Decimal(0)),
    0,
  );
  return amount.negated().greaterThan(held) ? held.negated() : null;
}

/**
 * The line and charge of a capped give-back: `1 ×` what is given back; the charge states no units, so that
 * the window is rated by amounts from then on (its units no longer say what was paid for). Nothing when
 * the window holds nothing, unless it grew and its whole span is to be charged once.
 */
function cappedLine(line: Omit<RatedLine, 'quantity' | 'price'>, charge: (quantity: Decimal | null, amount: Decimal) => Charge, capped: Decimal, currency: string, grown: boolean): RatedCharge | null {
  if (capped.isZero() && !grown) return null;
  const description = `${line.description}; credit notes and discounts gave back the rest, so ${formatAmount(capped.negated(), currency)} is what is left to give`;
  return { line: { ...line, description, quantity: '1', price: formatAmount(capped, currency) }, charges: [charge(capped.isZero() ? new Decimal(0) : null, capped)] };
}

/**
 * What a usage window owes now that its usage totals `total`: the whole window rated, the first time; after
 * that, the difference with what the ledger charged for it (usage that arrived late, or was corrected),
 * as its own line naming the window. A per-unit item charges the units not yet charged; any other the
 * difference of the rated amounts. Nothing when nothing changed. A difference that gives back more than
 * the window's charges still hold gives back what they hold (`cappedGiveBack`).
 */
export function rateUsage(terms: Pick<RatingTerms, 'currency' | 'items'>, window: UsageWindow, total: Decimal, ledger: ChargeLedger): RatedCharge | null {
  const item = terms.items.find((candidate) => candidate.id === window.planItemId);
  if (!item) throw AppError.validation(`plan item ${window.planItemId} is not among the terms`);
  const currency = terms.currency;
  // A window that grew since it was charged (an end moved later) still holds what was charged for its
  // earlier days: every charge of the item within the window counts against it.
  const charged = ledger.usage.filter((usage) => usage.planItemId === window.planItemId && usage.from >= window.from && usage.to <= window.to);
  const base = { planItemId: item.id, fromDate: window.from, toDate: window.to };
  const charge = (quantity: Decimal | null, amount: Decimal): Charge => ({ kind: 'usage', planItemId: item.id, from: window.from, to: window.to, period: window.period, quantity: quantity?.toFixed() ?? null, amount: formatAmount(amount, currency) });
  if (charged.length === 0) {
    const line = ratedLine(item, total, currency);
    return { line: { ...line, ...base }, charges: [charge(total, roundToMinor(toDecimal(line.quantity).times(line.price), currency))] };
  }
  const quantities = charged.map((usage) => usage.quantity);
  const chargedQuantity = quantities.every((quantity) => quantity !== null) ? quantities.reduce((sum, quantity) => sum.plus(quantity!), new Decimal(0)) : null;
  const chargedAmount = charged.reduce((sum, usage) => sum.plus(usage.amount), new Decimal(0));
  const late = { title: `${item.name}: usage of ${window.from} to ${window.to}` };
  // A window that grew (an end moved later) is charged for its whole span once, even when no usage came.
  const grown = !charged.some((usage) => usage.from === window.from && usage.to === window.to);
  if (item.pricingModel === 'per_unit' && chargedQuantity !== null) {
    const units = total.minus(chargedQuantity);
    if (units.isZero() && !grown) return null;
    const price = toDecimal(item.unitPrice!);
    const description = `${units.toFixed()} units after ${chargedQuantity.toFixed()} billed before (${total.toFixed()} in all) × ${price.toFixed()}`;
    const amount = roundToMinor(units.times(price), currency);
    const capped = cappedGiveBack(charged, amount);
    if (capped) return cappedLine({ ...base, ...late, description }, charge, capped, currency, grown);
    return { line: { ...base, ...late, description, quantity: units.toFixed(), price: price.toFixed() }, charges: [charge(units, amount)] };
  }
  const rated = toDecimal(priceItem(item, total.toFixed(), currency).amount);
  const difference = rated.minus(chargedAmount);
  if (difference.isZero() && !grown) return null;
  const description = `${total.toFixed()} in all rates ${formatAmount(rated, currency)}; ${formatAmount(chargedAmount, currency)} billed before`;
  const capped = cappedGiveBack(charged, difference);
  if (capped) return cappedLine({ ...base, ...late, description }, charge, capped, currency, grown);
  return {
    line: { ...base, ...late, description, quantity: '1', price: formatAmount(difference, currency) },
    charges: [charge(chargedQuantity === null ? null : total.minus(chargedQuantity), difference)],
  };
}

/** A window's usage per combination of its meter's dimension values, for `rateDimensionalUsage`. */
export interface DimensionalUsage {
  /** The meter's groupBy: every combination has a value (or null) at each. */
  groupBy: readonly string[];
  aggregation: string;
  combinations: readonly Combination[];
}

/**
 * Whether a plan item's usage is rated per dimension value (`rateDimensionalUsage`): it has prices per
 * dimension value, or lines split by dimensions.
 */
export const hasDimensionalPrices = (item: DimensionalTerms) => (item.dimensionalPrices?.length ?? 0) > 0 || (item.presentationGroupBy?.length ?? 0) > 0;

/**
 * What a usage window of an item with prices per dimension value owes: each combination of the meter's
 * values folded into the entry that prices it (the one matching most keys; else the item's own price;
 * else a 0.00 line of its own), one line per entry with usage, priced on the entry's total. The ledger
 * keeps each entry's charge by its dimensions, so that usage arriving later is charged per entry as the
 * difference with what was charged for it, as `rateUsage` does for a whole item. A first charge is split
 * by `presentationGroupBy` into lines per value, amounts shared in proportion to quantity; a later
 * difference is one line per entry, naming the window, as is the first charge of an entry whose window was
 * charged before.
 */
export function rateDimensionalUsage(terms: Pick<RatingTerms, 'currency' | 'items'>, window: UsageWindow, usage: DimensionalUsage, ledger: ChargeLedger): RatedCharge[] {
  const item = terms.items.find((candidate) => candidate.id === window.planItemId);
  if (!item) throw AppError.validation(`plan item ${window.planItemId} is not among the terms`);
  const currency = terms.currency;
  // The meter may have changed since the plan was saved.
  const problem = dimensionalProblems(item, usage)[0];
  if (problem) throw AppError.validation(`plan item ${item.id} (${item.name}): ${problem.message}`);
  const entries = foldUsage(item, usage.groupBy, usage.combinations, FOLDS[usage.aggregation]!);
  const charged = new Map<string, UsageCharged[]>();
  for (const usageCharged of ledger.usage) {
    if (usageCharged.planItemId !== item.id || usageCharged.from < window.from || usageCharged.to > window.to) continue;
    const key = usageCharged.dimensionsKey ?? dimensionsKey({});
    charged.set(key, [...(charged.get(key) ?? []), usageCharged]);
  }
  // An entry charged before that has no usage now (usage corrected away) owes the difference with nothing.
  for (const key of charged.keys()) {
    if (entries.some((entry) => entry.key === key)) continue;
    const dimensions = JSON.parse(key) as DimensionValues;
    const entry = (item.dimensionalPrices ?? []).find((candidate) => dimensionsKey(candidate.match) === key);
    const price = entry ?? (key === dimensionsKey({}) && item.pricingModel ? item : null);
    entries.push({ key, dimensions, price, quantity: new Decimal(0), parts: [] });
  }
  const base = { planItemId: item.id, fromDate: window.from, toDate: window.to };
  const hasEntries = (item.dimensionalPrices?.length ?? 0) > 0;
  const nameOf = (entry: EntryUsage, values: DimensionValues) => {
    // The item's own price beside entries prices the other usage; alone, it prices all of it.
    const isDefault = entry.price !== null && Object.keys(entry.dimensions).length === 0 && hasEntries;
    const parts = [isDefault ? 'other usage' : '', describeValues(values, usage.groupBy)].filter((part) => part !== '');
    return parts.length > 0 ? `${item.name} — ${parts.join(', ')}` : item.name;
  };
  // Usage of an entry first charged after its window was (a value that came late) is late usage too.
  const windowCharged = charged.size > 0;
  const rated: RatedCharge[] = [];
  for (const entry of entries) {
    const rate = (quantity: Decimal) => (entry.price ? priceItem(entry.price, quantity.toFixed(), currency) : null);
    const perUnit = entry.price?.pricingModel === 'per_unit' ? toDecimal(entry.price.unitPrice!) : undefined;
    const title = nameOf(entry, entry.dimensions);
    const dimensions = { ...entry.dimensions };
    const charge = (quantity: Decimal | null, amount: Decimal): Charge => ({ kind: 'usage', planItemId: item.id, from: window.from, to: window.to, period: window.period, quantity: quantity?.toFixed() ?? null, amount: formatAmount(amount, currency), dimensionsKey: entry.key });
    const before = charged.get(entry.key);
    if (!before) {
      const price = rate(entry.quantity);
      const amount = toDecimal(price?.amount ?? 0);
      const how = price ? price.lines.map((line) => `${line.description}: ${line.quantity} × ${line.unitPrice}`).join('; ') : `${entry.quantity.toFixed()} units: no price for these values`;
      const lineOf = (quantity: Decimal, share: Decimal, description: string) => {
        const figures = lineFigures(quantity, share, currency, perUnit ?? (price ? undefined : new Decimal(0)));
        return { quantity: figures.quantity, price: figures.price, description: figures.exact ? description : `${description} (${quantity.toFixed()} units)` };
      };
      if (entry.parts.length === 0 || windowCharged) {
        const named = windowCharged ? `${title}: usage of ${window.from} to ${window.to}` : title;
        rated.push({ line: { ...base, title: named, ...lineOf(entry.quantity, amount, how), dimensions }, charges: [charge(entry.quantity, amount)] });
        continue;
      }
      const shares = shareByQuantity(amount, entry.parts.map((part) => part.quantity), currency);
      entry.parts.forEach((part, i) => {
        const values = { ...entry.dimensions, ...part.values };
        const description = `${part.quantity.toFixed()} of ${entry.quantity.toFixed()} units (${how})`;
        rated.push({ line: { ...base, title: nameOf(entry, values), ...lineOf(part.quantity, shares[i]!, description), dimensions: values }, charges: i === 0 ? [charge(entry.quantity, amount)] : [] });
      });
      continue;
    }
    const quantities = before.map((usageCharged) => usageCharged.quantity);
    const chargedQuantity = quantities.every((quantity) => quantity !== null) ? quantities.reduce((sum, quantity) => sum.plus(quantity!), new Decimal(0)) : null;
    const chargedAmount = before.reduce((sum, usageCharged) => sum.plus(usageCharged.amount), new Decimal(0));
    const late = { title: `${title}: usage of ${window.from} to ${window.to}`, dimensions };
    // A window that grew (an end moved later) is charged for its whole span once, even when no usage came.
    const grown = !before.some((usageCharged) => usageCharged.from === window.from && usageCharged.to === window.to);
    if (perUnit !== undefined && chargedQuantity !== null) {
      const units = entry.quantity.minus(chargedQuantity);
      if (units.isZero() && !grown) continue;
      const description = `${units.toFixed()} units after ${chargedQuantity.toFixed()} billed before (${entry.quantity.toFixed()} in all) × ${perUnit.toFixed()}`;
      const amount = roundToMinor(units.times(perUnit), currency);
      const capped = cappedGiveBack(before, amount);
      const line = capped ? cappedLine({ ...base, ...late, description }, charge, capped, currency, grown) : { line: { ...base, ...late, description, quantity: units.toFixed(), price: perUnit.toFixed() }, charges: [charge(units, amount)] };
      if (line) rated.push(line);
      continue;
    }
    const total = toDecimal(rate(entry.quantity)?.amount ?? 0);
    const difference = total.minus(chargedAmount);
    const units = chargedQuantity === null ? null : entry.quantity.minus(chargedQuantity);
    if (difference.isZero() && (units === null || units.isZero()) && !grown) continue;
    const description = `${entry.quantity.toFixed()} in all rates ${formatAmount(total, currency)}; ${formatAmount(chargedAmount, currency)} billed before`;
    const capped = cappedGiveBack(before, difference);
    if (capped) {
      const line = cappedLine({ ...base, ...late, description }, charge, capped, currency, grown);
      if (line) rated.push(line);
      continue;
    }
    const figures = units === null ? { quantity: '1', price: formatAmount(difference, currency) } : lineFigures(units, difference, currency, entry.price ? undefined : new Decimal(0));
    rated.push({
      line: { ...base, ...late, description, quantity: figures.quantity, price: figures.price },
      charges: [charge(units, difference)],
    });
  }
  return rated;
}
