import fc from 'fast-check';
import { discountsOf, servesAnotherPeriod, type Coupon } from '../../src/domain/discounts';
import { Decimal } from '../../src/domain/money';

const percent = (value: string): Coupon => ({ code: 'P', percentOff: value, amountOff: null, currency: null, duration: 'forever', durationPeriods: null });
const amount = (value: string, currency = 'EUR'): Coupon => ({ code: 'A', percentOff: null, amountOff: value, currency, duration: 'once', durationPeriods: null });

const lines = fc.array(
  fc.record({ planItemId: fc.constantFrom('pli_a', 'pli_b', 'pli_c', null), amount: fc.integer({ min: -5_000, max: 1_000_000 }).map((cents) => (cents / 100).toFixed(2)) }),
  { minLength: 1, maxLength: 8 },
);
const sum = (values: Array<{ amount: string }>) => values.reduce((total, value) => total.plus(value.amount), new Decimal(0));

describe('coupon discounts', () => {
  it('when any coupon meets any lines, then no plan item is discounted below zero and an amount coupon takes exactly what it can', () => {
    fc.assert(
      fc.property(lines, fc.oneof(fc.integer({ min: 1, max: 10_000 }).map((bp) => percent((bp / 100).toFixed(2))), fc.integer({ min: 1, max: 2_000_000 }).map((cents) => amount((cents / 100).toFixed(2)))), (priced, coupon) => {
        const discounts = discountsOf(priced, coupon, 'EUR');
        for (const discount of discounts) {
          const group = sum(priced.filter((line) => line.planItemId === discount.planItemId));
          expect(new Decimal(discount.amount).greaterThan(0) && new Decimal(discount.amount).lessThanOrEqualTo(group)).toBe(true);
        }
        const positive = [...new Set(priced.map((line) => line.planItemId))].map((id) => sum(priced.filter((line) => line.planItemId === id))).filter((group) => group.greaterThan(0));
        const whole = positive.reduce((total, group) => total.plus(group), new Decimal(0));
        if (coupon.amountOff !== null) expect(sum(discounts).toFixed(2)).toBe(Decimal.min(whole, coupon.amountOff).toFixed(2));
        if (coupon.percentOff === '100.00') expect(sum(discounts).toFixed(2)).toBe(whole.toFixed(2));
      }),
      { numRuns: 300 },
    );
  });

  it('when a 15 % coupon meets two plan items, then each gets its own discount, rounded half-up to the cent', () => {
    expect(
      discountsOf(
        [
          { planItemId: 'fee', amount: '100.00' },
          { planItemId: 'usage', amount: '33.33' },
          { planItemId: 'usage', amount: '0.00' },
        ],
        percent('15'),
        'EUR',
      ),
    ).toEqual([
      { planItemId: 'fee', amount: '15.00' },
      { planItemId: 'usage', amount: '5.00' },
    ]);
  });

  it('when an amount coupon is in another currency than the invoice, or has nothing left, then it gives nothing', () => {
    expect(discountsOf([{ planItemId: 'fee', amount: '100.00' }], amount('10', 'USD'), 'EUR')).toEqual([]);
    expect(discountsOf([{ planItemId: 'fee', amount: '100.00' }], amount('10'), 'EUR', '0')).toEqual([]);
    expect(discountsOf([{ planItemId: 'fee', amount: '100.00' }], amount('10'), 'EUR', '4')).toEqual([{ planItemId: 'fee', amount: '4.00' }]);
  });

  it('when a coupon has served some periods, then once serves one, repeating its number, forever any', () => {
    expect([0, 1].map((used) => servesAnotherPeriod({ duration: 'once', durationPeriods: null }, used))).toEqual([true, false]);
    expect([0, 2, 3].map((used) => servesAnotherPeriod({ duration: 'repeating', durationPeriods: 3 }, used))).toEqual([true, true, false]);
    expect(servesAnotherPeriod({ duration: 'forever', durationPeriods: null }, 1000)).toBe(true);
  });
});
