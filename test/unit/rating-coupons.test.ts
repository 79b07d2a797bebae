import { billedPeriodKey, couponDiscounts, discountsKept, type DiscountableInvoice } from '../../src/domain/rating-coupons';
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

describe('couponDiscounts with corrections of periods billed before', () => {
  const november = { from: '2026-11-01', to: '2026-11-30' };
  const usageOf = (period: { from: string; to: string }, quantity: string, amount: string): Charge => ({ kind: 'usage', planItemId: 'tokens', from: period.from, to: period.to, period, quantity, amount });
  const lineOf = (period: { from: string; to: string }, quantity: string) => ({ planItemId: 'tokens', quantity, price: '0.5', fromDate: period.from, toDate: period.to });
  // December's invoice: 20 late October tokens (10.00) and November's 100 (50.00); October was billed before.
  const december: DiscountableInvoice = { contractPlanId: 'cp_1', currency: 'USD', items: [lineOf(october, '20'), lineOf(november, '100')], charges: [[usageOf(october, '20', '10.00')], [usageOf(november, '100', '50.00')]] };
  const billed = new Set([billedPeriodKey('cp_1', 'tokens', october)]);
  const halfOff = (periodsUsed: number, discounted: Array<{ planItemId: string; fromDate: string; toDate: string }>) => ({
    id: 'cc_2',
    couponId: 'cpn_2',
    coupon: { code: 'HALF', percentOff: '50', amountOff: null, currency: null, duration: 'repeating' as const, durationPeriods: 3 },
    periodsUsed,
    discounted,
  });

  it('when a percentage coupon with one period left served October, then its last period is November, and October\'s late usage carries the same percentage without taking a period', () => {
    const { lines, served } = couponDiscounts([december], [halfOff(2, [{ planItemId: 'tokens', fromDate: '2026-09-01', toDate: october.to }])], billed);
    expect(lines.map((discount) => [discount.price, discount.fromDate, discount.toDate])).toEqual([['-30', october.from, november.to]]);
    expect(served).toEqual([{ id: 'cc_2', periods: 1 }]);
  });

  it('when the coupon never served October (applied after it was billed), then October\'s late usage is billed at its price and November takes the coupon\'s period', () => {
    const { lines, served } = couponDiscounts([december], [halfOff(0, [])], billed);
    expect(lines.map((discount) => [discount.price, discount.fromDate, discount.toDate])).toEqual([['-25', november.from, november.to]]);
    expect(served).toEqual([{ id: 'cc_2', periods: 1 }]);
  });

  it('when October gives usage back and the coupon never served it, then the give-back does not lower what it takes off November', () => {
    const giveBack: DiscountableInvoice = { contractPlanId: 'cp_1', currency: 'USD', items: [lineOf(october, '-40'), lineOf(november, '100')], charges: [[usageOf(october, '-40', '-20.00')], [usageOf(november, '100', '50.00')]] };
    expect(couponDiscounts([giveBack], [halfOff(0, [])], billed).lines.map((discount) => discount.price)).toEqual(['-25']);
  });

  it('when a spent percentage coupon served October, then October\'s late usage alone is discounted by it, and it serves no period more', () => {
    const late: DiscountableInvoice = { contractPlanId: 'cp_1', currency: 'USD', items: [lineOf(october, '20')], charges: [[usageOf(october, '20', '10.00')]] };
    const { lines, served } = couponDiscounts([late], [halfOff(3, [{ planItemId: 'tokens', fromDate: october.from, toDate: october.to }])], billed);
    expect(lines.map((discount) => discount.price)).toEqual(['-5']);
    expect(served).toEqual([]);
  });

  it('when the new month bills nothing beside a correction the coupon discounts, then the coupon serves no period: it is left for a month that charges', () => {
    const empty: DiscountableInvoice = { contractPlanId: 'cp_1', currency: 'USD', items: [lineOf(october, '20'), lineOf(november, '0')], charges: [[usageOf(october, '20', '10.00')], [usageOf(november, '0', '0.00')]] };
    const { lines, served } = couponDiscounts([empty], [halfOff(2, [{ planItemId: 'tokens', fromDate: october.from, toDate: october.to }])], billed);
    expect(lines.map((discount) => discount.price)).toEqual(['-5']);
    expect(served).toEqual([]);
  });

  it('when a give-back was capped at what October still held (net of its discount, no units stated), then no coupon discounts it again', () => {
    const capped: Charge = { ...usageOf(october, '0', '-25.00'), quantity: null };
    const invoice: DiscountableInvoice = { contractPlanId: 'cp_1', currency: 'USD', items: [{ ...lineOf(october, '1'), price: '-25' }, lineOf(november, '100')], charges: [[capped], [usageOf(november, '100', '50.00')]] };
    const { lines } = couponDiscounts([invoice], [halfOff(1, [{ planItemId: 'tokens', fromDate: october.from, toDate: october.to }])], billed);
    expect(lines.map((discount) => [discount.price, discount.fromDate])).toEqual([['-25', november.from]]);
  });

  it('when an amount coupon served October, then October\'s late usage is billed at its price: the amount was given once for the period', () => {
    const amountOff = { ...halfOff(2, [{ planItemId: 'tokens', fromDate: october.from, toDate: october.to }]), coupon: { code: 'TEN', percentOff: null, amountOff: '10', currency: 'USD', duration: 'repeating' as const, durationPeriods: 3 } };
    const { lines, served } = couponDiscounts([december], [amountOff], billed);
    expect(lines.map((discount) => [discount.price, discount.fromDate, discount.toDate])).toEqual([['-10', november.from, november.to]]);
    expect(served).toEqual([{ id: 'cc_2', periods: 1 }]);
  });
});

describe('coupons that serve different periods of one plan item', () => {
  const january = { from: '2027-01-01', to: '2027-01-31' };
  const february = { from: '2027-02-01', to: '2027-02-28' };
  const feeOf = (period: { from: string; to: string }): Charge => ({ kind: 'fee', planItemId: 'fee', from: period.from, to: period.to, period, quantity: '1', amount: '100.00' });
  const lineOf = (period: { from: string; to: string }) => ({ planItemId: 'fee', quantity: '1', price: '100', fromDate: period.from, toDate: period.to });
  // A run that catches up January and February of a 100.00 fee.
  const catchUp: DiscountableInvoice = { currency: 'USD', items: [lineOf(january), lineOf(february)], charges: [[feeOf(january)], [feeOf(february)]] };
  const halfForever = { id: 'cc_half', couponId: 'cpn_half', coupon: { code: 'HALF', percentOff: '50', amountOff: null, currency: null, duration: 'forever' as const, durationPeriods: null }, periodsUsed: 0 };
  const seventyOnce = { id: 'cc_70', couponId: 'cpn_70', coupon: { code: 'SEVENTY', percentOff: null, amountOff: '70', currency: 'USD', duration: 'once' as const, durationPeriods: null }, periodsUsed: 0 };

  it('when 50 % off both months comes first, then a 70.00 coupon that serves January alone takes what is left of January (50.00), not what is left of both months less the first coupon (0.00)', () => {
    const { lines } = couponDiscounts([catchUp], [halfForever, seventyOnce]);
    expect(lines.map((discount) => [discount.couponId, discount.price, discount.fromDate, discount.toDate])).toEqual([
      ['cpn_half', '-100', january.from, february.to],
      ['cpn_70', '-50', january.from, january.to],
    ]);
  });

  it('when the amount coupon comes first, then it takes its 70.00 off January and the percentage its 100.00 off both months: together never more than they charged', () => {
    const { lines } = couponDiscounts([catchUp], [seventyOnce, halfForever]);
    expect(lines.map((discount) => [discount.couponId, discount.price])).toEqual([
      ['cpn_70', '-70'],
      ['cpn_half', '-100'],
    ]);
  });

  it('when a draft with both discounts is priced again, then each keeps what the lines of its own days have left', () => {
    const priced = [lineOf(january), lineOf(february)];
    const discounts = [
      { id: 'li_half', couponId: 'cpn_half', planItemId: 'fee', fromDate: january.from, toDate: february.to, amount: '100' },
      { id: 'li_70', couponId: 'cpn_70', planItemId: 'fee', fromDate: january.from, toDate: january.to, amount: '50' },
    ];
    const kept = discountsKept(priced, discounts, 'USD', new Map([['cpn_half', '50'], ['cpn_70', null]]));
    expect(Object.fromEntries([...kept].map(([id, amount]) => [id, amount.toFixed(2)]))).toEqual({ li_half: '100.00', li_70: '50.00' });
    // January cut to 20.00: the percentage takes 60.00 off the 120.00 left (10.00 of it off January), the amount coupon the 10.00 January has left.
    const cut = discountsKept([{ ...lineOf(january), price: '20' }, lineOf(february)], discounts, 'USD', new Map([['cpn_half', '50'], ['cpn_70', null]]));
    expect(Object.fromEntries([...cut].map(([id, amount]) => [id, amount.toFixed(2)]))).toEqual({ li_half: '60.00', li_70: '10.00' });
  });
});
