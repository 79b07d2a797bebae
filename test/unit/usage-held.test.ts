import fc from 'fast-check';
import { Decimal } from '../../src/domain/money';
import { priceItem } from '../../src/domain/pricing';
import { rateDimensionalUsage, rateUsage, type Charge, type ChargeLedger, type RatedItem, type UsageCharged, type UsageWindow } from '../../src/domain/rating';
import { chargeOfLine, heldByCharge, heldInWindow, windowOf, type LedgerUsageCharge, type NotedLine } from '../../src/domain/usage-held';

const window: UsageWindow = { planItemId: 'api', meterId: 'mtr', period: { from: '2026-10-01', to: '2026-10-31' }, from: '2026-10-01', to: '2026-10-31' };
const perUnit: RatedItem = { id: 'api', name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: 'mtr', effectiveFrom: null, effectiveTo: null };
const graduated: RatedItem = { ...perUnit, pricingModel: 'graduated', unitPrice: null, tiers: [{ upTo: '100', unitPrice: '2' }, { upTo: null, unitPrice: '0.25', flatFee: '5' }] };
const runs = { numRuns: Number(process.env.USAGE_HELD_RUNS ?? 300), ...(process.env.USAGE_HELD_SEED ? { seed: Number(process.env.USAGE_HELD_SEED) } : {}) };

/** A charge of the ledger as the engine made it, on its invoice, with the discount share its invoice gave it. */
interface Recorded {
  invoiceId: string;
  charge: Charge;
  discount: Decimal;
  noted: Decimal;
}

const ledgerOf = (recorded: readonly Recorded[]): ChargeLedger => ({
  fees: [],
  usage: recorded.map(({ charge, discount, noted }): UsageCharged => ({ ...charge, held: new Decimal(charge.amount).minus(discount).minus(noted).toFixed() })),
});

describe('what a usage window holds', () => {
  it('when 100 calls were charged 50.00 and a note gave all of it back, then deleting the calls gives back nothing more; a window a 50 % coupon halved gives back 25.00, what it paid', () => {
    const first = rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(100), { fees: [], usage: [] })!;
    expect(first.charges[0]).toMatchObject({ quantity: '100', amount: '50.00' });
    const noted: Recorded[] = [{ invoiceId: 'inv_1', charge: first.charges[0]!, discount: new Decimal(0), noted: new Decimal(50) }];
    expect(rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(0), ledgerOf(noted))).toBeNull();
    // Part of it noted: the rest is what is given back, as an amount, and the window is rated by amounts from then on.
    const part: Recorded[] = [{ ...noted[0]!, noted: new Decimal(20) }];
    const back = rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(0), ledgerOf(part))!;
    expect(back.line).toMatchObject({ title: 'API calls: usage of 2026-10-01 to 2026-10-31', quantity: '1', price: '-30.00' });
    expect(back.line.description).toContain('so 30.00 is what is left to give');
    expect(back.charges).toEqual([expect.objectContaining({ quantity: null, amount: '-30.00' })]);
    // Usage coming back is charged what it rates beyond what the window holds now: 60 calls rate 30.00.
    const again = rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(60), ledgerOf([...part, { invoiceId: 'inv_2', charge: back.charges[0]!, discount: new Decimal(0), noted: new Decimal(0) }]))!;
    expect(again.charges).toEqual([expect.objectContaining({ amount: '10.00' })]);

    const halved: Recorded[] = [{ invoiceId: 'inv_1', charge: first.charges[0]!, discount: new Decimal(25), noted: new Decimal(0) }];
    expect(rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(0), ledgerOf(halved))!.charges).toEqual([expect.objectContaining({ amount: '-25.00' })]);
    // Within what it holds, a correction is the plain difference.
    expect(rateUsage({ currency: 'USD', items: [perUnit] }, window, new Decimal(60), ledgerOf(halved))!.charges).toEqual([expect.objectContaining({ quantity: '-40', amount: '-20.00' })]);
  });

  it('when an item priced per dimension value is corrected down, then each price entry gives back no more than its own charges hold', () => {
    const tokens: RatedItem = {
      ...perUnit,
      id: 'api',
      pricingModel: null as unknown as 'per_unit',
      unitPrice: null,
      dimensionalPrices: [
        { match: { model: 'a' }, pricingModel: 'per_unit', unitPrice: '1' },
        { match: { model: 'b' }, pricingModel: 'volume', tiers: [{ upTo: null, unitPrice: '2' }] },
      ],
    };
    const meter = { groupBy: ['model'], aggregation: 'sum' };
    const first = rateDimensionalUsage({ currency: 'USD', items: [tokens] }, window, { ...meter, combinations: [{ values: { model: 'a' }, value: '10' }, { values: { model: 'b' }, value: '10' }] }, { fees: [], usage: [] });
    expect(first.flatMap((one) => one.charges.map((charge) => [charge.dimensionsKey, charge.amount]))).toEqual([
      ['{"model":"a"}', '10.00'],
      ['{"model":"b"}', '20.00'],
    ]);
    // A note gave back 8.00 of model a's line and 5.00 of model b's; then all usage is deleted.
    const noted = (key: string) => (key === '{"model":"a"}' ? new Decimal(8) : new Decimal(5));
    const ledger: ChargeLedger = { fees: [], usage: first.flatMap((one) => one.charges).map((charge) => ({ ...charge, held: new Decimal(charge.amount).minus(noted(charge.dimensionsKey!)).toFixed() })) };
    const back = rateDimensionalUsage({ currency: 'USD', items: [tokens] }, window, { ...meter, combinations: [] }, ledger);
    expect(back.map((one) => [one.line.title, one.line.quantity, one.line.price, one.charges[0]!.quantity, one.charges[0]!.amount])).toEqual([
      ['API calls — model a: usage of 2026-10-01 to 2026-10-31', '1', '-2.00', null, '-2.00'],
      ['API calls — model b: usage of 2026-10-01 to 2026-10-31', '1', '-15.00', null, '-15.00'],
    ]);
  });

  it('when a note names a line, then it counts against the charge its own invoice made for the same item, days and price entry (the most values of the line\'s)', () => {
    const charges: LedgerUsageCharge[] = [
      { invoiceId: 'inv_1', planItemId: 'tok', from: '2026-10-01', to: '2026-10-31', dimensionsKey: '{}', amount: '10.00', discount: '0' },
      { invoiceId: 'inv_1', planItemId: 'tok', from: '2026-10-01', to: '2026-10-31', dimensionsKey: '{"model":"a"}', amount: '40.00', discount: '4.00' },
      { invoiceId: 'inv_2', planItemId: 'tok', from: '2026-10-01', to: '2026-10-31', dimensionsKey: '{"model":"a"}', amount: '-15.00', discount: '0' },
      { invoiceId: 'inv_1', planItemId: 'api', from: '2026-10-01', to: '2026-10-31', dimensionsKey: null, amount: '7.00', discount: '0' },
    ];
    const line = (over: Partial<NotedLine>): NotedLine => ({ invoiceId: 'inv_1', planItemId: 'tok', from: '2026-10-01', to: '2026-10-31', dimensions: null, amount: '1.00', ...over });
    // A line split by project carries its entry's model too.
    expect(chargeOfLine(charges, line({ dimensions: { model: 'a', project: 'x' } }))).toBe(1);
    expect(chargeOfLine(charges, line({ dimensions: { model: 'b' } }))).toBe(0);
    expect(chargeOfLine(charges, line({ planItemId: 'api' }))).toBe(3);
    expect(chargeOfLine(charges, line({ planItemId: 'api', to: '2026-10-30' }))).toBe(-1);
    const held = heldByCharge(charges, [line({ dimensions: { model: 'a', project: 'x' }, amount: '6.00' }), line({ dimensions: { model: 'a', project: 'y' }, amount: '2.00' })]);
    expect(held.map((amount) => amount.toFixed(2))).toEqual(['10.00', '28.00', '-15.00', '7.00']);
    expect(windowOf(charges, 1)).toEqual([1, 2]);
    expect(heldInWindow(held, windowOf(charges, 1)).toFixed(2)).toBe('13.00');
    // A cancelled invoice's charges hold nothing, whether they charged or gave back.
    expect(heldByCharge(charges, [], new Set(['inv_2'])).map((amount) => amount.toFixed(2))).toEqual(['10.00', '36.00', '0.00', '7.00']);
  });
});

type Step = { kind: 'usage'; total: number } | { kind: 'note'; which: number; share: number } | { kind: 'discount'; share: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 400 }).map((total): Step => ({ kind: 'usage', total })) },
  { weight: 2, arbitrary: fc.record({ which: fc.nat(), share: fc.double({ min: 0, max: 1, noNaN: true }) }).map(({ which, share }): Step => ({ kind: 'note', which, share })) },
  { weight: 1, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((share): Step => ({ kind: 'discount', share })) },
);

describe('property: over random usage, credit notes and discounts on one window', () => {
  it('when the window is rated again after each change, then what it holds is what its usage rates less its discounts and notes, never below nothing, and nothing is given back twice', () => {
    fc.assert(
      fc.property(fc.constantFrom(perUnit, graduated), fc.array(stepArb, { minLength: 1, maxLength: 25 }), (item, steps) => {
        const terms = { currency: 'USD', items: [item] };
        const recorded: Recorded[] = [];
        let discounts = new Decimal(0);
        let notes = new Decimal(0);
        // The next charge's share of a coupon, as the invoice that makes it would give it.
        let nextDiscount = 0;
        const held = () => recorded.reduce((sum, one) => sum.plus(one.charge.amount).minus(one.discount).minus(one.noted), new Decimal(0));
        for (const step of steps) {
          if (step.kind === 'discount') {
            nextDiscount = step.share;
            continue;
          }
          if (step.kind === 'note') {
            // A note credits a positive line no more than it has left, nor more than the window holds.
            const lines = recorded.filter((one) => new Decimal(one.charge.amount).greaterThan(0));
            if (lines.length === 0) continue;
            const line = lines[step.which % lines.length]!;
            const left = Decimal.min(new Decimal(line.charge.amount).minus(line.discount).minus(line.noted), Decimal.max(held(), 0));
            const amount = left.times(step.share).toDecimalPlaces(2, Decimal.ROUND_DOWN);
            if (amount.lessThanOrEqualTo(0)) continue;
            line.noted = line.noted.plus(amount);
            notes = notes.plus(amount);
            continue;
          }
          const usage = step.total;
          const rated = rateUsage(terms, window, new Decimal(usage), recorded.length === 0 ? { fees: [], usage: [] } : ledgerOf(recorded));
          for (const charge of rated?.charges ?? []) {
            const amount = new Decimal(charge.amount);
            const discount = amount.greaterThan(0) ? amount.times(nextDiscount).toDecimalPlaces(2, Decimal.ROUND_DOWN) : new Decimal(0);
            discounts = discounts.plus(discount);
            recorded.push({ invoiceId: `inv_${recorded.length}`, charge, discount, noted: new Decimal(0) });
            // The line shows what its charge charges.
            expect(new Decimal(rated!.line.quantity).times(rated!.line.price).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2)).toBe(amount.toFixed(2));
          }
          // The oracle: the window's usage priced whole, less every discount and note, never below nothing.
          const whole = new Decimal(priceItem(item, usage, 'USD').amount);
          expect(held().toFixed(2)).toBe(Decimal.max(whole.minus(discounts).minus(notes), 0).toFixed(2));
        }
      }),
      runs,
    );
  });
});
