import fc from 'fast-check';
import { type BillingAnchor, type Suspension } from '../../src/domain/billing-periods';
import { AppError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';
import { type Coupon } from '../../src/domain/discounts';
import { chargeTax, feesDue, periodUsageWindows, rateUsage, shareDiscounts, usageWindows, type Charge, type ChargeLedger, type PeriodVersion, type RatedCharge, type RatedItem, type RatingTerms } from '../../src/domain/rating';
import { couponDiscounts, type DiscountLine } from '../../src/domain/rating-coupons';

// Calendar days through Date.UTC, independent of the engine's own arithmetic.
const DAY_MS = 86_400_000;
const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS;
const isoOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const addDays = (iso: string, n: number) => isoOf(dayOf(iso) + n);
const MINOR: Record<string, number> = { USD: 2, JPY: 0, KWD: 3 };

const seat: RatedItem = { id: 'seat', name: 'Seats', pricingModel: 'flat', unitPrice: '310', effectiveFrom: null, effectiveTo: null };
const calls: RatedItem = { id: 'api', name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: 'mtr_api', effectiveFrom: null, effectiveTo: null };
const monthly = (startDate: string, more: Partial<RatingTerms> = {}): RatingTerms => ({
  currency: 'USD',
  anchor: 'calendar',
  startDate,
  endDate: null,
  periods: [{ effectiveFrom: null, billingPeriod: 'monthly' }],
  items: [seat, calls],
  suspensions: [],
  ...more,
});
const noLedger: ChargeLedger = { fees: [], usage: [] };
const ledgerOf = (charges: Charge[]): ChargeLedger => ({
  fees: charges.filter((charge) => charge.kind === 'fee'),
  usage: charges.filter((charge) => charge.kind === 'usage'),
});

describe('the rating engine by hand', () => {
  const plan = monthly('2026-10-16');

  it('when a monthly plan starts on 16 October, then the seat fee is prorated 16/31 on that day and usage waits for the month to end', () => {
    const due = feesDue(plan, noLedger, '2026-10-16');
    expect(due.map((charge) => charge.line)).toEqual([{ planItemId: 'seat', title: 'Seats', description: '2026-10-16 to 2026-10-31 (16 of 31 days)', quantity: '1', price: '160.00', fromDate: '2026-10-16', toDate: '2026-10-31' }]);
    expect(due[0]!.charges).toEqual([{ kind: 'fee', planItemId: 'seat', from: '2026-10-16', to: '2026-10-31', period: { from: '2026-10-01', to: '2026-10-31' }, quantity: null, amount: '160.00' }]);
    expect(usageWindows(plan, '2026-10-16')).toEqual([]);
  });

  it('when the seat fee is for 7 seats, then its lines show the 7 at the price per seat that gives each amount exactly, prorated or whole', () => {
    const seven = monthly('2026-10-16', { items: [{ ...seat, unitPrice: '10', quantity: '7' }] });
    const first = feesDue(seven, noLedger, '2026-10-16');
    // 70.00 × 16/31 = 36.13, which 7 × 5.1614285714 gives when rounded half-up to the cent.
    expect(first.map((charge) => [charge.line.quantity, charge.line.price, charge.charges[0]!.amount])).toEqual([['7', '5.1614285714', '36.13']]);
    expect(new Decimal('7').times('5.1614285714').toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2)).toBe('36.13');
    const november = feesDue(seven, ledgerOf(first.flatMap((charge) => charge.charges)), '2026-11-01');
    expect(november.map((charge) => [charge.line.quantity, charge.line.price])).toEqual([['7', '10']]);
  });

  it('when 1 November comes with October charged, then November is charged in full and October usage is rated over the days used', () => {
    const october = feesDue(plan, noLedger, '2026-10-16').flatMap((charge) => charge.charges);
    const due = feesDue(plan, ledgerOf(october), '2026-11-01');
    expect(due.map((charge) => [charge.line.fromDate, charge.line.toDate, charge.line.price])).toEqual([['2026-11-01', '2026-11-30', '310.00']]);
    const windows = usageWindows(plan, '2026-11-01');
    expect(windows).toEqual([{ planItemId: 'api', meterId: 'mtr_api', period: { from: '2026-10-01', to: '2026-10-31' }, from: '2026-10-16', to: '2026-10-31' }]);
    const rated = rateUsage(plan, windows[0]!, new Decimal(1000), noLedger)!;
    expect(rated.line).toMatchObject({ quantity: '1000', price: '0.5', fromDate: '2026-10-16', toDate: '2026-10-31' });
    expect(rated.charges[0]).toMatchObject({ quantity: '1000', amount: '500.00' });
  });

  it('when usage arrives after its window was charged, then only the difference is charged, as a line naming the window, and nothing when nothing changed', () => {
    const window = usageWindows(plan, '2026-11-01')[0]!;
    const first = rateUsage(plan, window, new Decimal(1000), noLedger)!;
    expect(rateUsage(plan, window, new Decimal(1000), ledgerOf(first.charges))).toBeNull();
    const late = rateUsage(plan, window, new Decimal(1250), ledgerOf(first.charges))!;
    expect(late.line).toMatchObject({ title: 'API calls: usage of 2026-10-16 to 2026-10-31', quantity: '250', price: '0.5' });
    expect(late.charges[0]).toMatchObject({ quantity: '250', amount: '125.00' });
    // A tiered item charges the difference of the rated amounts: 1,000 at 0.10 then 500 more at 0.05.
    const tiered: RatedItem = { ...calls, pricingModel: 'graduated', unitPrice: null, tiers: [{ upTo: '1000', unitPrice: '0.10' }, { upTo: null, unitPrice: '0.05' }] };
    const terms = { ...plan, items: [seat, tiered] };
    const charged = rateUsage(terms, window, new Decimal(1000), noLedger)!;
    expect(charged.line).toMatchObject({ quantity: '1', price: '100.00' });
    expect(rateUsage(terms, window, new Decimal(1500), ledgerOf(charged.charges))!.line).toMatchObject({ quantity: '1', price: '25.00' });
  });

  it('when an item is added on 20 November to a plan charged through November, then the next run charges it from that day only', () => {
    const charged = [...feesDue(plan, noLedger, '2026-10-16'), ...feesDue(plan, noLedger, '2026-11-01')].flatMap((charge) => charge.charges);
    const support: RatedItem = { id: 'support', name: 'Support', pricingModel: 'flat', unitPrice: '50', effectiveFrom: '2026-11-20', effectiveTo: null };
    const due = feesDue({ ...plan, items: [seat, calls, support] }, ledgerOf(charged), '2026-12-01');
    expect(due.map((charge) => [charge.line.planItemId, charge.line.fromDate, charge.line.toDate, charge.line.price])).toEqual([
      ['seat', '2026-12-01', '2026-12-31', '310.00'],
      ['support', '2026-11-20', '2026-11-30', '18.33'],
      ['support', '2026-12-01', '2026-12-31', '50.00'],
    ]);
  });

  it('when the billing period changes from monthly to quarterly on 1 January, then December is a month and the first quarter a quarter, no day twice', () => {
    const periods: PeriodVersion[] = [
      { effectiveFrom: null, billingPeriod: 'monthly' },
      { effectiveFrom: '2027-01-01', billingPeriod: 'quarterly' },
    ];
    const terms = monthly('2026-12-01', { periods, items: [seat] });
    const december = feesDue(terms, noLedger, '2026-12-01').flatMap((charge) => charge.charges);
    const january = feesDue(terms, ledgerOf(december), '2027-01-01');
    expect(january.map((charge) => [charge.line.fromDate, charge.line.toDate, charge.line.price])).toEqual([['2027-01-01', '2027-03-31', '310.00']]);
    expect(feesDue(terms, ledgerOf([...december, ...january.flatMap((charge) => charge.charges)]), '2027-02-01')).toEqual([]);
  });

  it('when a contract is suspended inside a period, then those days are not charged, and the rest is charged once it resumes', () => {
    const suspensions: Suspension[] = [{ from: '2026-11-10', to: '2026-11-19' }];
    const due = feesDue(monthly('2026-11-01', { items: [seat], suspensions }), noLedger, '2026-11-01');
    expect(due[0]!.charges.map((charge) => [charge.from, charge.to, charge.amount])).toEqual([
      ['2026-11-01', '2026-11-09', '93.00'],
      ['2026-11-20', '2026-11-30', '113.67'],
    ]);
    expect(due[0]!.line).toMatchObject({ description: '2026-11-01 to 2026-11-30 (20 of 30 days)', price: '206.67' });
  });

  it('when a plan is one-time, then its fee is charged in full on its start day whatever the suspensions, and its usage the day after', () => {
    const terms = monthly('2026-10-16', { periods: [{ effectiveFrom: null, billingPeriod: 'one_time' }], suspensions: [{ from: '2026-10-16', to: null }] });
    const due = feesDue(terms, noLedger, '2026-10-16');
    expect(due.map((charge) => [charge.line.fromDate, charge.line.toDate, charge.line.price])).toEqual([['2026-10-16', '2026-10-16', '310.00']]);
    expect(feesDue(terms, ledgerOf(due[0]!.charges), '2026-10-17')).toEqual([]);
    expect(usageWindows(terms, '2026-10-17').map((window) => [window.from, window.to])).toEqual([['2026-10-16', '2026-10-16']]);
  });

  it('when a period is suspended whole, then it is not charged until the suspension ends, and then only the days after it', () => {
    const october = feesDue(monthly('2026-10-01', { items: [seat] }), noLedger, '2026-10-01').flatMap((charge) => charge.charges);
    expect(feesDue(monthly('2026-10-01', { items: [seat], suspensions: [{ from: '2026-10-20', to: null }] }), ledgerOf(october), '2026-11-01')).toEqual([]);
    const resumed = feesDue(monthly('2026-10-01', { items: [seat], suspensions: [{ from: '2026-10-20', to: '2026-11-15' }] }), ledgerOf(october), '2026-12-01');
    expect(resumed.map((charge) => [charge.line.fromDate, charge.line.price])).toEqual([
      ['2026-11-16', '155.00'],
      ['2026-12-01', '310.00'],
    ]);
  });

  it('when the contract plan ends (an end date, a termination), then nothing after its last day is charged, and a plan that ends before it starts charges nothing', () => {
    const ended = monthly('2026-10-16', { endDate: '2026-11-10' });
    const october = feesDue(ended, noLedger, '2026-10-16').flatMap((charge) => charge.charges);
    expect(feesDue(ended, ledgerOf(october), '2026-11-11').map((charge) => [charge.line.fromDate, charge.line.toDate, charge.line.price])).toEqual([['2026-11-01', '2026-11-10', '103.33']]);
    expect(usageWindows(ended, '2027-01-01').map((window) => [window.from, window.to])).toEqual([
      ['2026-10-16', '2026-10-31'],
      ['2026-11-01', '2026-11-10'],
    ]);
    const never = monthly('2026-10-16', { endDate: '2026-10-15' });
    expect([...feesDue(never, noLedger, '2027-01-01'), ...usageWindows(never, '2027-01-01')]).toEqual([]);
  });

  it('when a period is still open, then its usage windows are those of the period that holds the day, ended or not, and none before the plan starts or after it ends', () => {
    expect(periodUsageWindows(monthly('2026-10-16'), '2026-10-20')).toEqual({
      period: { from: '2026-10-01', to: '2026-10-31' },
      windows: [{ planItemId: 'api', meterId: 'mtr_api', period: { from: '2026-10-01', to: '2026-10-31' }, from: '2026-10-16', to: '2026-10-31' }],
    });
    const removed = monthly('2026-10-01', { items: [seat, { ...calls, effectiveTo: '2026-11-10' }] });
    expect(periodUsageWindows(removed, '2026-11-25')!.windows.map((window) => [window.from, window.to])).toEqual([['2026-11-01', '2026-11-10']]);
    expect(periodUsageWindows(monthly('2026-10-16'), '2026-10-15')).toBeNull();
    expect(periodUsageWindows(monthly('2026-10-16', { endDate: '2026-10-31' }), '2026-11-02')).toBeNull();
    expect(periodUsageWindows(monthly('2026-10-16', { items: [seat] }), '2026-10-20')).toEqual({ period: { from: '2026-10-01', to: '2026-10-31' }, windows: [] });
  });

  it('when a coupon line covers several charges, then its discount is shared in proportion to their amounts, exactly, and each charge is taxed on its net', () => {
    const charges: Charge[] = [
      { kind: 'fee', planItemId: 'seat', from: '2026-11-01', to: '2026-11-09', period: { from: '2026-11-01', to: '2026-11-30' }, quantity: null, amount: '93.00' },
      { kind: 'fee', planItemId: 'seat', from: '2026-11-20', to: '2026-11-30', period: { from: '2026-11-01', to: '2026-11-30' }, quantity: null, amount: '113.67' },
      { kind: 'fee', planItemId: 'other', from: '2026-11-01', to: '2026-11-30', period: { from: '2026-11-01', to: '2026-11-30' }, quantity: null, amount: '10.00' },
    ];
    const shared = shareDiscounts(charges, [{ planItemId: 'seat', fromDate: '2026-11-01', toDate: '2026-11-30', amount: '20.67' }], 'USD');
    expect(shared.map((charge) => charge.discount)).toEqual(['9.30', '11.37', undefined]);
    const taxes = [
      { rate: '20', appliesTo: 'all' as const },
      { rate: '5', appliesTo: ['other'] },
    ];
    expect(shared.map((charge) => chargeTax(charge, taxes, 'USD'))).toEqual(['16.74', '20.46', '2.50']);
  });

  it('when a date is not a calendar day, or a metered item is billed in advance, then it is refused as a validation error', () => {
    const problemOf = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error instanceof AppError && error.kind === 'validation' ? error.items[0]!.message : `not a validation error: ${String(error)}`;
      }
      return 'no error';
    };
    expect(problemOf(() => feesDue(plan, noLedger, '26-11-01'))).toBe('billingDate must be a calendar day YYYY-MM-DD, not 26-11-01');
    expect(problemOf(() => usageWindows({ ...plan, items: [{ ...calls, billingTiming: 'in_advance' }] }, '2026-11-01'))).toBe('plan item api has a meter: its usage can only be billed in arrears');
  });
});

// ---- the model-based property: random histories against a day-by-day oracle

const MONTHS = { monthly: 1, quarterly: 3, yearly: 12 } as const;
type Recurring = keyof typeof MONTHS;
const monthLength = (year: number, month0: number) => new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();

/** The oracle's period holding `day`: calendar months, quarters and years, or anniversaries of `start`, counted one by one. */
function oraclePeriod(kind: Recurring, anchor: BillingAnchor, start: string, day: string): [string, string] {
  const m = MONTHS[kind];
  if (anchor === 'calendar') {
    const [y, mo] = day.split('-').map(Number) as [number, number];
    const first = Math.floor((y * 12 + mo - 1) / m) * m;
    const from = isoOf(Date.UTC(Math.floor(first / 12), first % 12, 1) / DAY_MS);
    const to = isoOf(Date.UTC(Math.floor((first + m) / 12), (first + m) % 12, 1) / DAY_MS - 1);
    return [from, to];
  }
  const [sy, sm, sd] = start.split('-').map(Number) as [number, number, number];
  const startOf = (k: number) => {
    const month = sy * 12 + sm - 1 + k * m;
    const year = Math.floor(month / 12);
    return isoOf(Date.UTC(year, month % 12, Math.min(sd, monthLength(year, month % 12))) / DAY_MS);
  };
  let k = 0;
  while (startOf(k + 1) <= day) k += 1;
  while (startOf(k) > day) k -= 1;
  return [startOf(k), addDays(startOf(k + 1), -1)];
}

type Step =
  | { kind: 'run'; advance: number }
  | { kind: 'addItem'; fee: number; arrears: boolean }
  | { kind: 'removeItem'; which: number }
  | { kind: 'price'; which: number; fee: number }
  | { kind: 'coupon'; percent: number | null; amount: number; duration: 'once' | 'repeating' | 'forever'; periods: number }
  | { kind: 'uncoupon' }
  | { kind: 'period'; to: Recurring }
  | { kind: 'end'; after: number | null }
  | { kind: 'suspend' }
  | { kind: 'resume' }
  | { kind: 'usage'; back: number; units: number }
  | { kind: 'sync' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('run' as const), advance: fc.integer({ min: 0, max: 75 }) }) },
  fc.record({ kind: fc.constant('addItem' as const), fee: fc.integer({ min: 1, max: 100_000 }), arrears: fc.boolean() }),
  fc.record({ kind: fc.constant('removeItem' as const), which: fc.nat(5) }),
  fc.record({ kind: fc.constant('price' as const), which: fc.nat(5), fee: fc.integer({ min: 1, max: 100_000 }) }),
  fc.record({
    kind: fc.constant('coupon' as const),
    percent: fc.option(fc.integer({ min: 1, max: 100 })),
    amount: fc.integer({ min: 1, max: 50_000 }),
    duration: fc.constantFrom<'once' | 'repeating' | 'forever'>('once', 'repeating', 'forever'),
    periods: fc.integer({ min: 1, max: 4 }),
  }),
  fc.constant({ kind: 'uncoupon' as const }),
  fc.record({ kind: fc.constant('period' as const), to: fc.constantFrom<Recurring>('monthly', 'quarterly', 'yearly') }),
  fc.record({ kind: fc.constant('end' as const), after: fc.option(fc.integer({ min: 0, max: 400 })) }),
  fc.constant({ kind: 'suspend' as const }),
  fc.constant({ kind: 'resume' as const }),
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('usage' as const), back: fc.integer({ min: -40, max: 200 }), units: fc.integer({ min: 1, max: 5000 }) }) },
  fc.constant({ kind: 'sync' as const }),
);

const history = fc.record({
  currency: fc.constantFrom('USD', 'JPY', 'KWD'),
  anchor: fc.constantFrom<BillingAnchor>('calendar', 'anniversary'),
  kind: fc.constantFrom<Recurring>('monthly', 'quarterly', 'yearly'),
  start: fc.integer({ min: dayOf('2024-01-01'), max: dayOf('2027-12-31') }).map(isoOf),
  fee: fc.integer({ min: 1, max: 1_000_000 }),
  unitPrice: fc.constantFrom('0.01', '0.5', '0.0333', '2'),
  steps: fc.array(step, { maxLength: 30 }),
});

type History = typeof history extends fc.Arbitrary<infer T> ? T : never;

interface Document {
  date: string;
  charges: Charge[];
  /** Priced lines' amounts per plan item, and the coupons' discount lines. */
  gross: Map<string, Decimal>;
  discounts: DiscountLine[];
}

/** A coupon applied to the contract in the model: removed and applied again, it keeps what it served. */
interface ModelCoupon {
  coupon: Coupon;
  active: boolean;
  periodsUsed: number;
}

/**
 * Plays a history as the services do: runs charge what the engine says is due on their date and record it;
 * an edit of a plan takes effect from today or from the day after the last day charged, whichever is later
 * (as the API refuses an earlier one); usage may arrive for any day, billed or not; a sync forgets the
 * latest document's charges and prices it again on its date. A last run long after the end charges
 * everything left.
 */
function play(h: History) {
  const minor = MINOR[h.currency]!;
  const money = (units: number) => new Decimal(units).times(new Decimal(10).pow(-minor)).toFixed(minor);
  const items: RatedItem[] = [
    { id: 'base', name: 'Base', pricingModel: 'flat', unitPrice: money(h.fee), effectiveFrom: null, effectiveTo: null },
    { id: 'usage', name: 'Usage', pricingModel: 'per_unit', unitPrice: h.unitPrice, meterId: 'mtr', effectiveFrom: null, effectiveTo: null },
  ];
  const periods: PeriodVersion[] = [{ effectiveFrom: null, billingPeriod: h.kind }];
  const suspensions: Suspension[] = [];
  const events: Array<{ day: string; units: number }> = [];
  const documents: Document[] = [];
  const coupons: ModelCoupon[] = [];
  let endDate: string | null = null;
  let clock = h.start;
  const terms = (): RatingTerms => ({ currency: h.currency, anchor: h.anchor, startDate: h.start, endDate, periods, items, suspensions });
  const ledger = (): ChargeLedger => ledgerOf(documents.flatMap((document) => document.charges));
  const lastCharged = () => documents.flatMap((document) => document.charges).reduce((last, charge) => (charge.to > last ? charge.to : last), addDays(h.start, -1));
  const notBefore = (day: string) => (day > lastCharged() ? day : addDays(lastCharged(), 1));
  const usageIn = (from: string, to: string) => events.filter((event) => event.day >= from && event.day <= to).reduce((sum, event) => sum + event.units, 0);
  const rate = (date: string, against: ChargeLedger): RatedCharge[] => {
    const fees = feesDue(terms(), against, date);
    const usage = usageWindows(terms(), date).flatMap((window) => rateUsage(terms(), window, new Decimal(usageIn(window.from, window.to)), against) ?? []);
    return [...fees, ...usage];
  };
  const charge = (date: string, against: ChargeLedger): Charge[] => rate(date, against).flatMap((rated) => rated.charges);
  const run = (date: string) => {
    const rated = rate(date, ledger());
    if (rated.length === 0) return;
    const gross = new Map<string, Decimal>();
    for (const { line } of rated) gross.set(line.planItemId, (gross.get(line.planItemId) ?? new Decimal(0)).plus(new Decimal(line.quantity).times(line.price).toDecimalPlaces(minor, Decimal.ROUND_HALF_UP)));
    const active = coupons.filter((c) => c.active);
    const { lines, served } = couponDiscounts(
      [{ currency: h.currency, items: rated.map((r) => r.line), charges: rated.map((r) => r.charges) }],
      active.map((c, i) => ({ id: String(i), couponId: c.coupon.code, coupon: c.coupon, periodsUsed: c.periodsUsed })),
    );
    for (const { id, periods } of served) active[Number(id)]!.periodsUsed += periods;
    documents.push({ date, charges: rated.flatMap((r) => r.charges), gross, discounts: lines });
  };

  for (const s of h.steps) {
    if (s.kind === 'run') {
      clock = addDays(clock, s.advance);
      run(clock);
    } else if (s.kind === 'addItem') {
      items.push({ id: `item${items.length}`, name: 'Added', pricingModel: 'flat', unitPrice: money(s.fee), billingTiming: s.arrears ? 'in_arrears' : 'in_advance', effectiveFrom: clock, effectiveTo: null });
    } else if (s.kind === 'removeItem') {
      const item = items[s.which % items.length]!;
      if (item.effectiveTo !== null) continue;
      const from = notBefore(clock);
      if (item.effectiveFrom !== null && from <= item.effectiveFrom) continue;
      item.effectiveTo = addDays(from, -1);
    } else if (s.kind === 'price') {
      // A price change: the item ends the day before and a new version takes over at the new fee.
      const item = items[s.which % items.length]!;
      if (item.effectiveTo !== null || item.meterId) continue;
      const from = notBefore(clock);
      if (item.effectiveFrom !== null && from <= item.effectiveFrom) continue;
      item.effectiveTo = addDays(from, -1);
      items.push({ ...item, id: `item${items.length}`, unitPrice: money(s.fee), effectiveFrom: from, effectiveTo: null });
    } else if (s.kind === 'coupon') {
      const code = `C${coupons.length}`;
      const existing = coupons.find((c) => !c.active);
      // Applied again, a removed coupon keeps the periods it served on the contract.
      if (existing && coupons.length > 1) existing.active = true;
      else
        coupons.push({
          coupon: { code, percentOff: s.percent === null ? null : String(s.percent), amountOff: s.percent === null ? money(s.amount) : null, currency: h.currency, duration: s.duration, durationPeriods: s.duration === 'repeating' ? s.periods : null },
          active: true,
          periodsUsed: 0,
        });
    } else if (s.kind === 'uncoupon') {
      const active = coupons.find((c) => c.active);
      if (active) active.active = false;
    } else if (s.kind === 'period') {
      const from = notBefore(clock);
      const latest = periods[periods.length - 1]!;
      if (latest.effectiveFrom !== null && from <= latest.effectiveFrom) continue;
      periods.push({ effectiveFrom: from, billingPeriod: s.to });
    } else if (s.kind === 'end') {
      const end = s.after === null ? null : addDays(clock, s.after);
      if (end !== null && end < lastCharged()) continue;
      endDate = end;
    } else if (s.kind === 'suspend') {
      if (suspensions.some((suspension) => suspension.to === null)) continue;
      const latest = suspensions[suspensions.length - 1];
      if (latest && latest.to! >= clock) continue;
      suspensions.push({ from: clock, to: null });
    } else if (s.kind === 'resume') {
      const open = suspensions.find((suspension) => suspension.to === null);
      if (!open) continue;
      if (open.from > addDays(clock, -1)) suspensions.splice(suspensions.indexOf(open), 1);
      else open.to = addDays(clock, -1);
    } else if (s.kind === 'usage') {
      events.push({ day: addDays(clock, -s.back), units: s.units });
    } else if (documents.length > 0) {
      // A sync: the latest document forgets its charges and is priced again on its date, within its days.
      const latest = documents[documents.length - 1]!;
      const days = latest.charges.reduce((span, c) => ({ from: c.from < span.from ? c.from : span.from, to: c.to > span.to ? c.to : span.to }), { from: '9999-12-31', to: '0001-01-01' });
      latest.charges = [];
      latest.charges = charge(latest.date, ledger()).filter((c) => c.from >= days.from && c.to <= days.to);
    }
  }
  if (endDate === null) endDate = notBefore(addDays(clock, 30));
  run(addDays(endDate, 400));
  return { items, periods, suspensions, events, documents, coupons, endDate, minor };
}

describe('property: over random histories of runs, plan edits, suspensions, late usage and syncs', () => {
  it('every day of every item is charged once at the terms in force that day, every usage unit once, each line within a minor unit', () => {
    fc.assert(
      fc.property(history, (h) => {
        const { items, periods, suspensions, events, documents, coupons, endDate, minor } = play(h);
        const charges = documents.flatMap((document) => document.charges);
        const kindOn = (day: string) => [...periods].reverse().find((version) => version.effectiveFrom === null || version.effectiveFrom <= day)!.billingPeriod as Recurring;
        const inForce = (item: RatedItem, day: string) => day >= h.start && day <= endDate && (item.effectiveFrom === null || item.effectiveFrom <= day) && (item.effectiveTo === null || day <= item.effectiveTo);
        const suspended = (day: string) => suspensions.some((s) => s.from <= day && (s.to === null || day <= s.to));
        const tolerance = new Decimal(10).pow(-minor);

        // Fees: day by day, charged once when in force and not suspended; never outside; each run priced as its share of the period in force.
        for (const item of items.filter((candidate) => !candidate.meterId)) {
          const runs = charges.filter((c) => c.kind === 'fee' && c.planItemId === item.id);
          const fee = new Decimal(item.unitPrice!);
          for (const run of runs) {
            const [from, to] = oraclePeriod(kindOn(run.from), h.anchor, h.start, run.from);
            expect(run.period).toEqual({ from, to });
            expect(run.to <= to).toBe(true);
            const share = fee.times(dayOf(run.to) - dayOf(run.from) + 1).dividedBy(dayOf(to) - dayOf(from) + 1);
            expect(new Decimal(run.amount).minus(share).abs().lessThanOrEqualTo(tolerance)).toBe(true);
          }
          for (let day = addDays(h.start, -3); day <= addDays(endDate, 3); day = addDays(day, 1)) {
            const times = runs.filter((run) => run.from <= day && day <= run.to).length;
            if (!inForce(item, day)) expect(times).toBe(0);
            else if (suspended(day)) expect(times).toBeLessThanOrEqual(1);
            else expect(times).toBe(1);
          }
        }

        // Usage: every unit of a day the item was in force is charged once, in the window the oracle puts the day in; each charge priced exactly.
        const usage = items.find((item) => item.id === 'usage')!;
        const expected = new Map<string, number>();
        for (const event of events) {
          if (!inForce(usage, event.day)) continue;
          const [from, to] = oraclePeriod(kindOn(event.day), h.anchor, h.start, event.day);
          const firstDay = [from, h.start, usage.effectiveFrom ?? from, ...periods.flatMap((v) => (v.effectiveFrom !== null && v.effectiveFrom <= event.day ? [v.effectiveFrom] : []))].reduce((a, b) => (b > a ? b : a));
          const lastDay = [to, endDate, usage.effectiveTo ?? to, ...periods.flatMap((v) => (v.effectiveFrom !== null && v.effectiveFrom > event.day ? [addDays(v.effectiveFrom, -1)] : []))].reduce((a, b) => (b < a ? b : a));
          const key = `${firstDay} ${lastDay}`;
          expected.set(key, (expected.get(key) ?? 0) + event.units);
        }
        // A window charged while the contract ended inside it (its end later moved on) stays as it was, and
        // the rest of the oracle's window is charged as a delta beside it: a charge counts for the oracle's
        // window that holds it.
        const windows = [...expected.keys()].map((key) => key.split(' ') as [string, string]);
        const charged = new Map<string, number>();
        for (const c of charges.filter((candidate) => candidate.kind === 'usage')) {
          const holding = windows.find(([from, to]) => from <= c.from && c.to <= to);
          const key = holding ? holding.join(' ') : `${c.from} ${c.to}`;
          charged.set(key, (charged.get(key) ?? 0) + Number(c.quantity));
          expect(c.amount).toBe(new Decimal(c.quantity!).times(h.unitPrice).toFixed(minor));
        }
        for (const [key, units] of expected) expect([key, charged.get(key) ?? 0]).toEqual([key, units]);
        for (const [key, units] of charged) expect([key, units]).toEqual([key, expected.get(key) ?? 0]);

        // Coupons: none serves more periods than it grants, and no document discounts an item beyond what it charged.
        for (const { coupon, periodsUsed } of coupons) {
          const grants = coupon.duration === 'once' ? 1 : coupon.duration === 'repeating' ? coupon.durationPeriods! : Number.POSITIVE_INFINITY;
          expect(periodsUsed).toBeLessThanOrEqual(grants);
          // Per plan item, the periods whose lines its discount lines covered.
          const periodsOf = new Map<string, number>();
          for (const document of documents) {
            for (const line of document.discounts.filter((candidate) => candidate.couponId === coupon.code)) {
              const covered = document.charges.filter((c) => c.planItemId === line.planItemId && c.from >= line.fromDate && c.to <= line.toDate);
              periodsOf.set(line.planItemId!, (periodsOf.get(line.planItemId!) ?? 0) + new Set(covered.map((c) => `${c.period.from} ${c.period.to}`)).size);
            }
          }
          for (const count of periodsOf.values()) expect(count).toBeLessThanOrEqual(grants);
        }
        for (const document of documents) {
          const byItem = new Map<string, Decimal>();
          for (const line of document.discounts) byItem.set(line.planItemId!, (byItem.get(line.planItemId!) ?? new Decimal(0)).minus(line.price));
          for (const [item, discount] of byItem) expect(discount.lessThanOrEqualTo(document.gross.get(item) ?? 0)).toBe(true);
        }
      }),
      {
        numRuns: Number(process.env.RATING_PROPERTY_RUNS ?? 500),
        ...(process.env.RATING_PROPERTY_SEED ? { seed: Number(process.env.RATING_PROPERTY_SEED) } : {}),
        examples: [
          // Usage charged in a window the contract's end cut to one day; the end then removed: the rest of the month is the oracle's window.
          [{ currency: 'USD', anchor: 'calendar', kind: 'monthly', start: '2024-01-01', fee: 1, unitPrice: '0.01', steps: [{ kind: 'end', after: 0 }, { kind: 'usage', back: 0, units: 1 }, { kind: 'run', advance: 1 }, { kind: 'end', after: null }] }],
          // A once coupon on a quarterly contract that turns yearly: the year and the first quarter start on one day and are two periods.
          [{ currency: 'USD', anchor: 'calendar', kind: 'quarterly', start: '2024-01-01', fee: 1, unitPrice: '0.01', steps: [{ kind: 'run', advance: 55 }, { kind: 'run', advance: 36 }, { kind: 'coupon', percent: null, amount: 1, duration: 'once', periods: 1 }, { kind: 'usage', back: 1, units: 1 }, { kind: 'period', to: 'yearly' }, { kind: 'suspend' }] }],
          // A repeating coupon of two periods after a change to quarterly: January, then 1 February (the rest of
          // a month), then the quarter charged from 2 February though it began on 1 January: the coupon takes
          // January and February, in the order their days were charged.
          [{ currency: 'USD', anchor: 'calendar', kind: 'monthly', start: '2024-01-01', fee: 1, unitPrice: '0.01', steps: [{ kind: 'end', after: 0 }, { kind: 'run', advance: 32 }, { kind: 'coupon', percent: null, amount: 1, duration: 'repeating', periods: 2 }, { kind: 'period', to: 'quarterly' }, { kind: 'end', after: null }] }],
        ],
      },
    );
  });
});
