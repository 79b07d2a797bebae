import { couponDiscounts, type DiscountableInvoice } from '../../src/domain/rating-coupons';
import type { Charge } from '../../src/domain/rating';

const october = { from: '2026-10-01', to: '2026-10-31' };
const usage = (quantity: string, amount: string): Charge => ({ kind: 'usage', planItemId: 'tokens', from: october.from, to: october.to, period: october, quantity, amount });
const line = (quantity: string) => ({ planItemId: 'tokens', quantity, price: '0.5', fromDate: october.from, toDate: october.to });
const tenPercentOnce = { id: 'cc_1', couponId: 'cpn_1', coupon: { code: 'TEN', percentOff: '10', amountOff: null, currency: null, duration: 'once' as const, durationPeriods: null }, periodsUsed: 0 };

describe('couponDiscounts with lines split by presentation values', () => {
  it("when an entry's usage is split into lines per project, only the first carrying the charges, then the coupon discounts every part, for one period", () => {
    // 300 tokens of one entry at 0.50, split 200 (alpha) and 100 (beta): the charges ride on the first line.
    const invoice: DiscountableInvoice = { currency: 'USD', items: [line('200'), line('100')], charges: [[usage('300', '150.00')], []] };
    const { lines, served } = couponDiscounts([invoice], [tenPercentOnce]);
    expect(served).toEqual([{ id: 'cc_1', periods: 1 }]);
    expect(lines.map((discount) => [discount.planItemId, discount.price])).toEqual([['tokens', '-15']]);
  });

  it('when a line without charges has no part of its plan item before it, then it is in no period the coupon serves', () => {
    const invoice: DiscountableInvoice = { currency: 'USD', items: [{ ...line('10'), planItemId: 'other' }, line('200')], charges: [[], [usage('200', '100.00')]] };
    const { lines } = couponDiscounts([invoice], [tenPercentOnce]);
    expect(lines.map((discount) => [discount.planItemId, discount.price])).toEqual([['tokens', '-10']]);
  });
});

describe('couponDiscounts when there is nothing to discount', () => {
  it('when the period was billed at 0.00 (no usage), then the coupon serves no period and takes nothing: it is left for the next', () => {
    const invoice: DiscountableInvoice = { currency: 'USD', items: [line('0')], charges: [[usage('0', '0.00')]] };
    expect(couponDiscounts([invoice], [tenPercentOnce])).toEqual({ lines: [], served: [] });
  });
});
