import fc from 'fast-check';
import { Decimal } from '../../src/domain/money';
import { periodUsageWindows, rateUsage, usageWindows, type Charge, type ChargeLedger, type RatedItem, type RatedLine, type RatingTerms } from '../../src/domain/rating';

/**
 * Progressive billing through the rating engine: a billing period's usage charged at any number of
 * checkpoints while it is open (what a threshold's invoice bills), then the rest by the period's own
 * invoice through the ledger's deltas. Whatever the checkpoints, the charges add up to the period's usage
 * priced whole, by an oracle written here from the price lists alone.
 */

const terms = (item: RatedItem): RatingTerms => ({
  currency: 'USD',
  anchor: 'calendar',
  startDate: '2026-11-01',
  endDate: null,
  periods: [{ effectiveFrom: null, billingPeriod: 'monthly' }],
  items: [item],
  suspensions: [],
});

const ledgerOf = (charges: Charge[]): ChargeLedger => ({ fees: [], usage: charges.filter((charge) => charge.kind === 'usage') });
const cents = (value: Decimal) => value.toDecimalPlaces(2, Decimal.ROUND_HALF_UP);

type Model = { kind: 'per_unit'; price: number } | { kind: 'graduated' | 'volume'; bound: number; low: number; high: number } | { kind: 'package'; size: number; price: number };

/** The item a model describes, prices in cents. */
function itemOf(model: Model): RatedItem {
  const base = { id: 'api', name: 'API calls', meterId: 'mtr_api', effectiveFrom: null, effectiveTo: null };
  switch (model.kind) {
    case 'per_unit':
      return { ...base, pricingModel: 'per_unit', unitPrice: (model.price / 100).toFixed(2) };
    case 'package':
      return { ...base, pricingModel: 'package', unitPrice: (model.price / 100).toFixed(2), packageSize: String(model.size) };
    default:
      return { ...base, pricingModel: model.kind, unitPrice: null, tiers: [{ upTo: String(model.bound), unitPrice: (model.high / 100).toFixed(2) }, { upTo: null, unitPrice: (model.low / 100).toFixed(2) }] };
  }
}

/** The oracle: what `units` cost under the model, from its price list alone. */
function oracle(model: Model, units: number): Decimal {
  const price = (centsValue: number) => new Decimal(centsValue).dividedBy(100);
  switch (model.kind) {
    case 'per_unit':
      return price(model.price).times(units);
    case 'package':
      return price(model.price).times(Math.ceil(units / model.size));
    case 'volume':
      return price(units <= model.bound ? model.high : model.low).times(units);
    case 'graduated':
      return price(model.high).times(Math.min(units, model.bound)).plus(price(model.low).times(Math.max(0, units - model.bound)));
  }
}

const models: fc.Arbitrary<Model> = fc.oneof(
  fc.record({ kind: fc.constant('per_unit' as const), price: fc.integer({ min: 1, max: 500 }) }),
  fc.record({ kind: fc.constant('package' as const), size: fc.integer({ min: 1, max: 100 }), price: fc.integer({ min: 1, max: 5000 }) }),
  fc.record({ kind: fc.constantFrom('graduated' as const, 'volume' as const), bound: fc.integer({ min: 1, max: 2000 }), low: fc.integer({ min: 0, max: 100 }), high: fc.integer({ min: 1, max: 300 }) }),
);

/** Cumulative usage at each checkpoint of the open period, and the period's final total: never decreasing. */
const histories = fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 7 }).map((steps) => steps.reduce<number[]>((totals, step) => [...totals, (totals.at(-1) ?? 0) + step], []));

/** Charges the checkpoints as progressive invoices would, then the final total as the period's invoice; answers every rated line. */
function bill(model: Model, totals: number[]) {
  const plan = terms(itemOf(model));
  const open = periodUsageWindows(plan, '2026-11-20')!.windows[0]!;
  const ended = usageWindows(plan, '2026-12-01')[0]!;
  const charges: Charge[] = [];
  const lines: RatedLine[] = [];
  totals.forEach((total, index) => {
    const window = index === totals.length - 1 ? ended : open;
    const rated = rateUsage(plan, window, new Decimal(total), ledgerOf(charges));
    if (!rated) return;
    charges.push(...rated.charges);
    lines.push(rated.line);
  });
  return { charges, lines };
}

describe('progressive billing through the rating engine', () => {
  it('the open window is the ended one: the period invoice bills only what the checkpoints did not', () => {
    const plan = terms(itemOf({ kind: 'per_unit', price: 25 }));
    expect(periodUsageWindows(plan, '2026-11-20')!.windows).toEqual(usageWindows(plan, '2026-12-01'));
  });

  it('when volume prices fall past a tier, the period invoice credits what the checkpoints billed too much: a negative line', () => {
    const model: Model = { kind: 'volume', bound: 1000, low: 5, high: 10 };
    const { charges, lines } = bill(model, [900, 1500]);
    expect(lines.map((line) => [line.quantity, line.price])).toEqual([
      ['1', '90.00'],
      ['1', '-15.00'],
    ]);
    expect(charges.reduce((sum, charge) => sum.plus(charge.amount), new Decimal(0)).toFixed(2)).toBe('75.00');
  });

  it('property: whatever the checkpoints, the invoices add up exactly to the period priced whole, each line as much as its charge', () => {
    fc.assert(
      fc.property(models, histories, (model, totals) => {
        const { charges, lines } = bill(model, totals);
        const billed = charges.reduce((sum, charge) => sum.plus(charge.amount), new Decimal(0));
        expect(billed.toFixed(2)).toBe(cents(oracle(model, totals.at(-1)!)).toFixed(2));
        const lineTotal = lines.reduce((sum, line) => sum.plus(cents(new Decimal(line.quantity).times(line.price))), new Decimal(0));
        expect(lineTotal.toFixed(2)).toBe(billed.toFixed(2));
      }),
      { numRuns: 500 },
    );
  });
});
