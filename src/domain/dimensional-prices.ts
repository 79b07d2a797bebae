/**
 * Prices per dimension value: a metered plan item's `dimensionalPrices`, each a price for the usage whose
 * dimension values (the meter's `groupBy`) match its `match`, and the item's own price, if it has one,
 * for the usage no entry matches. Pure code: the rating engine (./rating.ts) folds the usage of each
 * combination of values into the entry that prices it, and prices each entry's total.
 *
 * - An entry matches a combination when every key of its `match` has that value there (a combination
 *   without a value at a key matches no entry naming it). The entry matching the most keys wins. A value
 *   past 400 bytes is grouped by its digest (./dimension-value.ts), which is what a match then names.
 * - Two entries could tie when they name as many keys and no key on which they name different values:
 *   some combination would match both equally. A plan that has such a pair is refused when saved.
 * - Only additive usage folds: `sum` and `count` add, `max` takes the greatest. `latest` and
 *   `unique_count` cannot be folded from per-combination values and take no dimensional prices.
 * - `presentationGroupBy` splits an entry's line by the values of more dimensions (sum and count only):
 *   quantities add up to the entry's, amounts are its amount shared in proportion to quantity.
 */
import { allocate, Decimal, formatAmount, roundToMinor, toDecimal } from './money';
import type { PricedPlanItem } from './pricing';

/** Dimension values an entry asks for: a key of the meter's groupBy and the value it must have. */
export type DimensionMatch = Readonly<Record<string, string>>;

/** Values of dimensions, null where the usage had none. */
export type DimensionValues = Readonly<Record<string, string | null>>;

/** A price for the usage whose dimension values match. */
export interface DimensionalPrice extends PricedPlanItem {
  match: DimensionMatch;
}

/** What a metered item may say about prices per dimension value. */
export interface DimensionalTerms {
  dimensionalPrices?: readonly DimensionalPrice[] | null;
  presentationGroupBy?: readonly string[] | null;
}

/** How a meter's per-combination values fold into a total: add them, or take the greatest. */
export type Fold = 'add' | 'max';

/** Aggregations whose per-combination values fold, and how. */
export const FOLDS: Readonly<Record<string, Fold>> = { sum: 'add', count: 'add', max: 'max' };

/** Aggregations whose values may be split for presentation: they add up. */
export const ADDITIVE = new Set(['sum', 'count']);

/** A problem with dimensional prices, with the path (under the item) where it lies. */
export interface DimensionalProblem {
  path: string;
  message: string;
}

const keysOf = (match: DimensionMatch) => Object.keys(match);

/** Whether some combination of values would match both entries equally: as many keys, no conflicting value. */
export function couldTie(a: DimensionMatch, b: DimensionMatch): boolean {
  const aKeys = keysOf(a);
  if (aKeys.length !== keysOf(b).length) return false;
  return aKeys.every((key) => !Object.hasOwn(b, key) || b[key] === a[key]);
}

/** How an entry is named: its values in the order of the meter's groupBy ("model a, direction input"). */
export function describeValues(values: DimensionValues, order: readonly string[]): string {
  const keys = [...order.filter((key) => Object.hasOwn(values, key)), ...Object.keys(values).filter((key) => !order.includes(key)).sort()];
  return keys.map((key) => `${key} ${values[key] ?? '(none)'}`).join(', ');
}

/**
 * What is wrong with an item's dimensional prices against its meter (groupBy and aggregation), each
 * problem with its path under the item: keys not among the meter's groupBy, an aggregation that does not
 * fold, presentation keys not among the groupBy, two entries that could tie.
 */
export function dimensionalProblems(terms: DimensionalTerms, meter: { groupBy: readonly string[]; aggregation: string }): DimensionalProblem[] {
  const problems: DimensionalProblem[] = [];
  const entries = terms.dimensionalPrices ?? [];
  const presentation = terms.presentationGroupBy ?? [];
  if (entries.length === 0 && presentation.length === 0) return problems;
  const dimensions = meter.groupBy.length > 0 ? meter.groupBy.join(', ') : 'none';
  if (!FOLDS[meter.aggregation]) {
    problems.push(
      entries.length > 0
        ? { path: 'dimensionalPrices', message: `the meter aggregates by ${meter.aggregation}, whose values per dimension value do not add up: prices per dimension value need a sum, count or max meter` }
        : { path: 'presentationGroupBy', message: `the meter aggregates by ${meter.aggregation}: lines split by presentationGroupBy would not add up; it needs a sum or count meter` },
    );
    return problems;
  }
  if (presentation.length > 0 && !ADDITIVE.has(meter.aggregation)) {
    problems.push({ path: 'presentationGroupBy', message: `the meter aggregates by ${meter.aggregation}: lines split by presentationGroupBy would not add up; it needs a sum or count meter` });
  }
  presentation.forEach((key, i) => {
    if (!meter.groupBy.includes(key)) problems.push({ path: `presentationGroupBy.${i}`, message: `"${key}" is not a dimension of the meter (its groupBy: ${dimensions})` });
  });
  entries.forEach((entry, i) => {
    for (const key of keysOf(entry.match)) {
      if (!meter.groupBy.includes(key)) problems.push({ path: `dimensionalPrices.${i}.match.${key}`, message: `"${key}" is not a dimension of the meter (its groupBy: ${dimensions})` });
    }
  });
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const a = entries[i]!.match;
      const b = entries[j]!.match;
      if (!couldTie(a, b)) continue;
      const both = describeValues({ ...a, ...b }, meter.groupBy);
      problems.push({
        path: `dimensionalPrices.${j}.match`,
        message: `dimensionalPrices ${i} and ${j} tie: usage with ${both} would match both on as many keys; make one of them name a key more, or name a different value on a key both name`,
      });
    }
  }
  return problems;
}

/** A canonical text for values, their keys sorted: what the charge ledger records per entry. */
export function dimensionsKey(values: DimensionValues): string {
  return JSON.stringify(Object.fromEntries(Object.keys(values).sort().map((key) => [key, values[key]])));
}

/**
 * The entry that prices a combination: the index of the matching entry naming the most keys (the first
 * of equals, which a saved plan never has), or -1 when none matches.
 */
export function bestEntry(entries: ReadonlyArray<{ match: DimensionMatch }>, values: DimensionValues): number {
  let best = -1;
  let bestKeys = -1;
  entries.forEach((entry, i) => {
    const keys = keysOf(entry.match);
    if (keys.length > bestKeys && keys.every((key) => values[key] === entry.match[key])) {
      best = i;
      bestKeys = keys.length;
    }
  });
  return best;
}

/** The usage of one combination of the meter's dimension values (a row of the aggregation by groupBy). */
export interface Combination {
  values: DimensionValues;
  /** The combination's aggregate; null: nothing to take (a max over no value). */
  value: string | null;
}

/** A price entry's usage: what priced it (null: no entry and no default), its dimensions and its total. */
export interface EntryUsage {
  /** The key the ledger records it by. */
  key: string;
  /** The entry's match, {} for the item's default price, the combination for usage nothing prices. */
  dimensions: DimensionValues;
  price: PricedPlanItem | null;
  quantity: Decimal;
  /** Per value of the presentation dimensions (their keys in the item's order), in order of those values. */
  parts: Array<{ values: DimensionValues; quantity: Decimal }>;
}

const foldInto = (total: Decimal | undefined, value: Decimal, fold: Fold) => (total === undefined ? value : fold === 'add' ? total.plus(value) : Decimal.max(total, value));

const compareValues = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);

/**
 * The combinations folded into the entries that price them, in the order of the entries, then the
 * default price ({}), then one entry per combination nothing prices (in order of its values). Only
 * entries with usage are there. Each is also split by the values of `presentationGroupBy`.
 */
export function foldUsage(item: DimensionalTerms & { pricingModel?: PricedPlanItem['pricingModel'] | null } & PricedPlanItem, groupBy: readonly string[], combinations: readonly Combination[], fold: Fold): EntryUsage[] {
  const entries = item.dimensionalPrices ?? [];
  const presentation = item.presentationGroupBy ?? [];
  const hasDefault = Boolean(item.pricingModel);
  const buckets = new Map<string, { order: number; values: DimensionValues; dimensions: DimensionValues; price: PricedPlanItem | null; quantity?: Decimal; parts: Map<string, { values: DimensionValues; quantity?: Decimal }> }>();
  for (const combination of combinations) {
    const index = bestEntry(entries, combination.values);
    let dimensions: DimensionValues;
    let price: PricedPlanItem | null;
    let order: number;
    if (index >= 0) {
      const { match, ...entryPrice } = entries[index]!;
      [dimensions, price, order] = [match, entryPrice, index];
    } else if (hasDefault) {
      [dimensions, price, order] = [{}, item, entries.length];
    } else {
      [dimensions, price, order] = [Object.fromEntries(groupBy.map((key) => [key, combination.values[key] ?? null])), null, entries.length + 1];
    }
    const key = dimensionsKey(dimensions);
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = { order, values: dimensions, dimensions, price, parts: new Map() }));
    if (combination.value === null) continue;
    const value = toDecimal(combination.value);
    bucket.quantity = foldInto(bucket.quantity, value, fold);
    if (presentation.length > 0) {
      const values = Object.fromEntries(presentation.map((name) => [name, combination.values[name] ?? null]));
      const partKey = JSON.stringify(presentation.map((name) => values[name]));
      const part = bucket.parts.get(partKey) ?? { values };
      part.quantity = foldInto(part.quantity, value, fold);
      bucket.parts.set(partKey, part);
    }
  }
  const byValues = (a: DimensionValues, b: DimensionValues, keys: readonly string[]) => {
    for (const key of keys) {
      const order = compareValues(a[key] ?? null, b[key] ?? null);
      if (order !== 0) return order;
    }
    return 0;
  };
  return [...buckets]
    .sort(([, a], [, b]) => a.order - b.order || byValues(a.values, b.values, groupBy))
    .map(([key, bucket]) => ({
      key,
      dimensions: bucket.dimensions,
      price: bucket.price,
      quantity: bucket.quantity ?? new Decimal(0),
      parts: [...bucket.parts.values()].map((part) => ({ values: part.values, quantity: part.quantity ?? new Decimal(0) })).sort((a, b) => byValues(a.values, b.values, presentation)),
    }));
}

/**
 * `amount` shared over quantities in the currency's minor units by largest remainder (ties to the
 * earlier), adding up to it exactly; equally when the quantities add up to zero (every one zero, or
 * usage below zero in one part as large as the others' above it), where no proportion exists.
 */
export function shareByQuantity(amount: Decimal, quantities: readonly Decimal[], currency: string): Decimal[] {
  if (quantities.length === 0) return [];
  const whole = quantities.reduce((sum, quantity) => sum.plus(quantity), new Decimal(0));
  const weights = whole.isZero() ? quantities.map(() => new Decimal(1)) : quantities;
  if (amount.isNegative()) return allocate(amount.negated(), weights, currency).map((share) => share.negated());
  return allocate(amount, weights, currency);
}

/** Most decimals an invoice line's price keeps (invoice_items.price is NUMERIC(30, 10)). */
const PRICE_SCALE = 10;

/**
 * An invoice line's quantity and price for an amount (the line's amount is `quantity × price` rounded
 * half-up to the minor unit): the quantity itself with a price of at most 10 decimals that gives the
 * amount exactly, `preferred` first when it does; else one of `amount` (the quantity then stated apart).
 */
export function lineFigures(quantity: Decimal, amount: Decimal, currency: string, preferred?: Decimal): { quantity: string; price: string; exact: boolean } {
  const gives = (price: Decimal) => roundToMinor(quantity.times(price), currency).equals(amount);
  const candidates: Decimal[] = [];
  if (preferred) candidates.push(preferred);
  if (!quantity.isZero()) {
    const near = amount.dividedBy(quantity).toDecimalPlaces(PRICE_SCALE, Decimal.ROUND_HALF_UP);
    const step = new Decimal(10).pow(-PRICE_SCALE);
    candidates.push(near, near.plus(step), near.minus(step));
  } else if (amount.isZero()) {
    candidates.push(new Decimal(0));
  }
  const price = candidates.find((candidate) => candidate.decimalPlaces() <= PRICE_SCALE && gives(candidate));
  if (price) return { quantity: quantity.toFixed(), price: price.toFixed(), exact: true };
  return { quantity: '1', price: formatAmount(amount, currency), exact: false };
}
