import fc from 'fast-check';
import { DomainError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';
import { priceItem, validatePlanItemPricing, type Tier } from '../../src/domain/pricing';

const TIERS: Tier[] = [
  { upTo: 100, unitPrice: '0.10' },
  { upTo: 1000, unitPrice: '0.05', flatFee: 2 },
  { upTo: null, unitPrice: '0.01' },
];

describe('priceItem by hand', () => {
  it('when the item is flat, then it charges price × its own quantity whatever the usage', () => {
    expect(priceItem({ pricingModel: 'flat', unitPrice: '49.99' }, 12345, 'USD').amount).toBe('49.99');
    expect(priceItem({ pricingModel: 'flat', unitPrice: 10, quantity: 3 }, 0, 'USD').amount).toBe('30.00');
  });

  it('when the item is per unit, then it charges price × quantity, rounded once at the end', () => {
    expect(priceItem({ pricingModel: 'per_unit', unitPrice: '0.0015' }, 1001, 'USD').amount).toBe('1.50');
    expect(priceItem({ pricingModel: 'per_unit', unitPrice: '0.0015' }, 1003, 'USD').amount).toBe('1.50');
    expect(priceItem({ pricingModel: 'per_unit', unitPrice: '0.0015' }, 1004, 'USD').amount).toBe('1.51');
  });

  it('when the item is graduated, then each tier prices its own units and its flat fee once', () => {
    // 100 × 0.10 + 900 × 0.05 + 2 + 500 × 0.01 = 10 + 45 + 2 + 5
    const price = priceItem({ pricingModel: 'graduated', tiers: TIERS }, 1500, 'USD');
    expect(price.amount).toBe('62.00');
    expect(price.lines.map((line) => line.description)).toEqual(['tier 1', 'tier 2', 'tier 2 flat fee', 'tier 3']);
    expect(priceItem({ pricingModel: 'graduated', tiers: TIERS }, 50, 'USD').amount).toBe('5.00');
    expect(priceItem({ pricingModel: 'graduated', tiers: TIERS }, 0, 'USD').amount).toBe('0.00');
  });

  it('when the item is volume, then the tier the total falls in prices every unit', () => {
    expect(priceItem({ pricingModel: 'volume', tiers: TIERS }, 1000, 'USD').amount).toBe('52.00');
    expect(priceItem({ pricingModel: 'volume', tiers: TIERS }, 1001, 'USD').amount).toBe('10.01');
    expect(priceItem({ pricingModel: 'volume', tiers: TIERS }, 100, 'USD').amount).toBe('10.00');
  });

  it('when the item is a package, then whole packages are charged', () => {
    expect(priceItem({ pricingModel: 'package', unitPrice: 5, packageSize: 100 }, 201, 'USD').amount).toBe('15.00');
    expect(priceItem({ pricingModel: 'package', unitPrice: 5, packageSize: 100 }, 200, 'USD').amount).toBe('10.00');
  });

  it('when the currency has no minor unit, then the amount has no decimals', () => {
    expect(priceItem({ pricingModel: 'per_unit', unitPrice: '1.5' }, 3, 'JPY').amount).toBe('5');
    expect(priceItem({ pricingModel: 'per_unit', unitPrice: '0.0005' }, 3, 'KWD').amount).toBe('0.002');
  });

  it.each([
    [{ pricingModel: 'graduated', tiers: [{ upTo: 10, unitPrice: 1 }] }, 'unbounded'],
    [{ pricingModel: 'graduated', tiers: [{ upTo: 10, unitPrice: 1 }, { upTo: 5, unitPrice: 1 }, { upTo: null, unitPrice: 1 }] }, 'sorted'],
    [{ pricingModel: 'per_unit', unitPrice: -1 }, 'negative'],
    [{ pricingModel: 'package', unitPrice: 1, packageSize: 0 }, 'greater than zero'],
    [{ pricingModel: 'volume', tiers: [] }, 'required'],
  ] as const)('when the item is malformed (%#), then a DomainError says why', (item, message) => {
    expect(() => validatePlanItemPricing(item as never)).toThrow(DomainError);
    expect(() => validatePlanItemPricing(item as never)).toThrow(message);
  });
});

const price = fc.integer({ min: 0, max: 100_000 }).map((cents) => (cents / 10_000).toFixed(4));
const tiersArb = fc
  .uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 5 })
  .chain((bounds) =>
    fc.tuple(fc.array(price, { minLength: bounds.length + 1, maxLength: bounds.length + 1 }), fc.array(fc.option(price, { nil: undefined }), { minLength: bounds.length + 1, maxLength: bounds.length + 1 })).map(([prices, fees]) => {
      const sorted = [...bounds].sort((a, b) => a - b);
      return [...sorted.map((upTo, i) => ({ upTo, unitPrice: prices[i]!, flatFee: fees[i] })), { upTo: null, unitPrice: prices[sorted.length]!, flatFee: fees[sorted.length] }] as Tier[];
    }),
  );
const quantity = fc.integer({ min: 0, max: 50_000 });

/** An independent reading of graduated pricing: walk unit bands tier by tier. */
function graduatedByHand(tiers: Tier[], q: number): Decimal {
  let total = new Decimal(0);
  let lower = 0;
  for (const tier of tiers) {
    const upper = tier.upTo === null ? q : Math.min(q, Number(tier.upTo));
    if (upper > lower) total = total.plus(new Decimal(tier.unitPrice).times(upper - lower)).plus(tier.flatFee ?? 0);
    if (tier.upTo === null || q <= Number(tier.upTo)) break;
    lower = Number(tier.upTo);
  }
  return total.toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
}

describe('priceItem properties', () => {
  it('when graduated, then the amount is the sum over the tiers', () => {
    fc.assert(fc.property(tiersArb, quantity, (tiers, q) => {
      expect(priceItem({ pricingModel: 'graduated', tiers }, q, 'USD').amount).toBe(graduatedByHand(tiers, q).toFixed(2));
    }));
  });

  it('when volume, then exactly one tier prices all the units', () => {
    fc.assert(fc.property(tiersArb, quantity, (tiers, q) => {
      const result = priceItem({ pricingModel: 'volume', tiers }, q, 'USD');
      const tier = tiers.find((t) => t.upTo === null || q <= Number(t.upTo))!;
      expect(result.lines.filter((line) => line.description.endsWith('flat fee') === false)).toHaveLength(1);
      expect(result.amount).toBe(new Decimal(tier.unitPrice).times(q).plus(tier.flatFee ?? 0).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2));
    }));
  });

  it('when the quantity grows, then per-unit, graduated and package prices never fall', () => {
    fc.assert(fc.property(tiersArb, price, fc.integer({ min: 1, max: 500 }), quantity, quantity, (tiers, unitPrice, packageSize, a, b) => {
      const [low, high] = a <= b ? [a, b] : [b, a];
      for (const item of [
        { pricingModel: 'per_unit' as const, unitPrice },
        { pricingModel: 'graduated' as const, tiers },
        { pricingModel: 'package' as const, unitPrice, packageSize },
      ]) {
        expect(Number(priceItem(item, low, 'USD').amount)).toBeLessThanOrEqual(Number(priceItem(item, high, 'USD').amount));
      }
    }));
  });

  it('when usage adds up to less than nothing, then a per-unit price gives the units back and every other model rates it as no usage', () => {
    fc.assert(fc.property(tiersArb, price, fc.integer({ min: 1, max: 500 }), fc.integer({ min: -50_000, max: -1 }), (tiers, unitPrice, packageSize, q) => {
      expect(priceItem({ pricingModel: 'per_unit', unitPrice }, q, 'USD').amount).toBe(new Decimal(unitPrice).times(q).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2));
      for (const item of [
        { pricingModel: 'graduated' as const, tiers },
        { pricingModel: 'volume' as const, tiers },
        { pricingModel: 'package' as const, unitPrice, packageSize },
        { pricingModel: 'flat' as const, unitPrice },
      ]) {
        expect(priceItem(item, q, 'USD')).toEqual(priceItem(item, 0, 'USD'));
      }
    }));
  });

  it('when any item is priced, then the amount is never negative and has the currency\'s decimals', () => {
    fc.assert(fc.property(tiersArb, quantity, fc.constantFrom('USD', 'JPY', 'KWD'), (tiers, q, currency) => {
      for (const model of ['graduated', 'volume'] as const) {
        const amount = priceItem({ pricingModel: model, tiers }, q, currency).amount;
        expect(Number(amount)).toBeGreaterThanOrEqual(0);
        expect(amount.split('.')[1]?.length ?? 0).toBe({ USD: 2, JPY: 0, KWD: 3 }[currency]);
      }
    }));
  });
});
