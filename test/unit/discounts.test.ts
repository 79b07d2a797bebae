import fc from 'fast-check';
import { discountsOf, netOfDiscounts, servesAnotherPeriod, type Coupon, type InvoiceLine } from '../../src/domain/discounts';
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

  it('when a coupon line discounts the lines of its plan item, then each line is net of its share, the shares add up to the discount, and lines outside its days keep their amount', () => {
    const month = (m: number) => ({ fromDate: `2026-0${m}-01`, toDate: `2026-0${m}-28` });
    fc.assert(
      fc.property(
        fc.array(fc.record({ planItemId: fc.constantFrom('pli_a', 'pli_b'), month: fc.constantFrom(7, 8), cents: fc.integer({ min: 1, max: 1_000_000 }) }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 10_000 }),
        (drawn, basisPoints) => {
          const charged: InvoiceLine[] = drawn.map((line, i) => ({ id: `itm_${i}`, planItemId: line.planItemId, couponId: null, amount: (line.cents / 100).toFixed(2), ...month(line.month) }));
          // The run's discount: a percentage of plan item A's July lines, as one line over July.
          const july = charged.filter((line) => line.planItemId === 'pli_a' && line.fromDate === '2026-07-01');
          const discount = new Decimal(sum(july)).times(basisPoints).dividedBy(10_000).toDecimalPlaces(2, Decimal.ROUND_HALF_UP);
          const lines = discount.isZero() ? charged : [...charged, { id: 'cpl', planItemId: 'pli_a', couponId: 'cpn', amount: discount.negated().toFixed(2), ...month(7) }];
          const net = netOfDiscounts(lines, 'EUR');
          expect([...net.keys()].sort()).toEqual(charged.map((line) => line.id).sort());
          for (const line of charged) {
            const value = net.get(line.id)!;
            expect(value.greaterThanOrEqualTo(0) && value.lessThanOrEqualTo(line.amount)).toBe(true);
            if (!july.includes(line)) expect(value.toFixed(2)).toBe(line.amount);
          }
          expect(july.reduce((total, line) => total.plus(net.get(line.id)!), new Decimal(0)).toFixed(2)).toBe(sum(july).minus(discount).toFixed(2));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('when a run caught up three months and a once coupon took 20 % off July, then only July is net of it', () => {
    const fee = (id: string, from: string, to: string): InvoiceLine => ({ id, planItemId: 'pli_fee', couponId: null, amount: '100.00', fromDate: from, toDate: to });
    const net = netOfDiscounts(
      [fee('jul', '2026-07-01', '2026-07-31'), fee('aug', '2026-08-01', '2026-08-31'), fee('sep', '2026-09-01', '2026-09-30'), { id: 'cpl', planItemId: 'pli_fee', couponId: 'cpn', amount: '-20.00', fromDate: '2026-07-01', toDate: '2026-07-31' }],
      'EUR',
    );
    expect(Object.fromEntries([...net].map(([id, value]) => [id, value.toFixed(2)]))).toEqual({ jul: '80.00', aug: '100.00', sep: '100.00' });
  });
});
