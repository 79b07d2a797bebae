import fc from 'fast-check';
import { periodsOf, prorate, type BillingAnchor, type BillingPeriodKind, type DayRange, type Suspension } from '../../src/domain/billing-periods';
import { AppError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';

// An oracle for calendar days built on Date.UTC, independent of the module's own arithmetic.
const DAY_MS = 86_400_000;
const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS;
const isoOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
const addDays = (iso: string, n: number) => isoOf(dayOf(iso) + n);
const lengthOf = (range: DayRange) => dayOf(range.to) - dayOf(range.from) + 1;
const monthLength = (year: number, month1: number) => new Date(Date.UTC(year, month1, 0)).getUTCDate();
const MINOR: Record<string, number> = { USD: 2, JPY: 0, KWD: 3 };

const day = fc.integer({ min: dayOf('1900-01-01'), max: dayOf('2199-12-31') }).map(isoOf);
const recurring = fc.constantFrom<Exclude<BillingPeriodKind, 'one_time'>>('monthly', 'quarterly', 'yearly');
const anchor = fc.constantFrom<BillingAnchor>('calendar', 'anniversary');
const MONTHS = { monthly: 1, quarterly: 3, yearly: 12 } as const;


describe('periods by hand', () => {
  it('when the anchor is the 31st, then each start clamps to its month from the anchor day, never cumulatively', () => {
    const starts = (anchorDate: string) => periodsOf('monthly', 'anniversary', anchorDate, { from: anchorDate, to: `${anchorDate.slice(0, 4)}-05-31` }).map((p) => p.from);
    expect(starts('2026-01-31')).toEqual(['2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30', '2026-05-31']);
    expect(starts('2028-01-31')).toEqual(['2028-01-31', '2028-02-29', '2028-03-31', '2028-04-30', '2028-05-31']);
    expect(periodsOf('monthly', 'anniversary', '2026-01-31', { from: '2026-02-15', to: '2026-02-15' })).toEqual([{ from: '2026-01-31', to: '2026-02-27' }]);
  });

  it('when the anchor is the calendar, then quarters start in January, April, July and October and years on 1 January', () => {
    expect(periodsOf('quarterly', 'calendar', '2026-05-20', { from: '2026-05-20', to: '2026-10-01' })).toEqual([
      { from: '2026-04-01', to: '2026-06-30' },
      { from: '2026-07-01', to: '2026-09-30' },
      { from: '2026-10-01', to: '2026-12-31' },
    ]);
    expect(periodsOf('yearly', 'calendar', '2028-02-29', { from: '2028-02-29', to: '2029-01-01' })).toEqual([
      { from: '2028-01-01', to: '2028-12-31' },
      { from: '2029-01-01', to: '2029-12-31' },
    ]);
    expect(periodsOf('yearly', 'anniversary', '2028-02-29', { from: '2028-02-29', to: '2029-03-01' })).toEqual([
      { from: '2028-02-29', to: '2029-02-27' },
      { from: '2029-02-28', to: '2030-02-27' },
    ]);
  });

  it('when a plan is one-time, then its only period is its start day', () => {
    expect(periodsOf('one_time', 'calendar', '2026-10-16', { from: '2026-10-01', to: '2026-12-31' })).toEqual([{ from: '2026-10-16', to: '2026-10-16' }]);
  });

  it('when a date is not a calendar day or a span is reversed, then it is refused as a validation error', () => {
    const problemOf = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        return error instanceof AppError && error.kind === 'validation' ? error.items[0]!.message : `not a validation error: ${String(error)}`;
      }
      return 'accepted';
    };
    expect(problemOf(() => periodsOf('monthly', 'calendar', '2026-02-30', { from: '2026-01-01', to: '2026-01-31' }))).toBe('anchorDate must be a calendar day YYYY-MM-DD, not 2026-02-30');
    expect(problemOf(() => periodsOf('monthly', 'calendar', '2026-01-01', { from: '2026-02-01', to: '2026-01-31' }))).toBe('span ends before it starts');
    expect(problemOf(() => prorate('1', 'USD', { from: '2026-11-01', to: '2026-11-30' }, { from: '2026-11-01', to: '2026-11-30' }, [{ from: '2026-11-02', to: '2026-11-01' }]))).toBe('suspensions[0] ends before it starts');
  });
});

describe('proration by hand', () => {
  it('when a part does not divide evenly, then it rounds half-up from the period start and the rest of the period gets what remains', () => {
    const period = { from: '2026-11-01', to: '2026-11-02' };
    expect(prorate('0.05', 'USD', period, { from: '2026-11-01', to: '2026-11-01' }).amount).toBe('0.03');
    expect(prorate('0.05', 'USD', period, { from: '2026-11-02', to: '2026-11-02' }).amount).toBe('0.02');
    expect(prorate('0.01', 'USD', period, { from: '2026-11-02', to: '2026-11-02' }).amount).toBe('0.00');
    expect(prorate('100', 'JPY', { from: '2026-11-01', to: '2026-11-03' }, { from: '2026-11-02', to: '2026-11-02' })).toEqual({ amount: '34', days: 1, periodDays: 3 });
  });

  it('when a contract is suspended inside a period, then those days bill no fee and a period wholly suspended is not due until it resumes', () => {
    const november = { from: '2026-11-01', to: '2026-11-30' };
    expect(prorate('300', 'USD', november, november, [{ from: '2026-11-11', to: '2026-11-20' }])).toEqual({ amount: '200.00', days: 20, periodDays: 30 });
    expect(prorate('300', 'USD', november, { from: '2026-10-01', to: '2026-11-05' }, [{ from: '2026-11-04', to: null }])).toEqual({ amount: '30.00', days: 3, periodDays: 30 });

  });
});

describe('periods, for any kind, anchor and span', () => {
  it('they are contiguous, never overlap, and hold every day of the span exactly once', () => {
    fc.assert(
      fc.property(recurring, anchor, day, fc.integer({ min: -400, max: 400 }), fc.integer({ min: 0, max: 1500 }), (kind, anchorKind, anchorDate, offset, length) => {
        const span = { from: addDays(anchorDate, offset), to: addDays(anchorDate, offset + length) };
        const periods = periodsOf(kind, anchorKind, anchorDate, span);
        expect(periods[0]!.from <= span.from && span.from <= periods[0]!.to).toBe(true);
        expect(periods.at(-1)!.from <= span.to && span.to <= periods.at(-1)!.to).toBe(true);
        periods.slice(1).forEach((period, i) => expect(period.from).toBe(addDays(periods[i]!.to, 1)));
        const [shortest, longest] = { monthly: [28, 31] as const, quarterly: [89, 92] as const, yearly: [365, 366] as const }[kind];
        for (const period of periods) expect(lengthOf(period) >= shortest && lengthOf(period) <= longest).toBe(true);
        const covered = periods.reduce((sum, p) => sum + lengthOf({ from: p.from > span.from ? p.from : span.from, to: p.to < span.to ? p.to : span.to }), 0);
        expect(covered).toBe(lengthOf(span));
        if (anchorKind === 'calendar') {
          for (const period of periods) {
            const [year, month] = period.from.split('-').map(Number) as [number, number];
            expect(period.from.endsWith('-01') && (month - 1) % MONTHS[kind] === 0).toBe(true);
            expect(addDays(period.to, 1).endsWith('-01')).toBe(true);
            expect(dayOf(period.to) - dayOf(period.from) + 1).toBe(dayOf(isoOf(Date.UTC(year, month - 1 + MONTHS[kind], 1) / DAY_MS)) - dayOf(period.from));
          }
        }
      }),
    );
  });

  it('anniversary periods start on the anchor day of every 1, 3 or 12 months, clamped to the month, for every anchor day 1 to 31', () => {
    const anchorDay = fc.integer({ min: 1, max: 31 });
    fc.assert(
      fc.property(recurring, fc.integer({ min: 1900, max: 2190 }), fc.integer({ min: 1, max: 12 }), anchorDay, (kind, year, month, wanted) => {
        const dayOfMonth = Math.min(wanted, monthLength(year, month));
        const anchorDate = `${year}-${String(month).padStart(2, '0')}-${String(dayOfMonth).padStart(2, '0')}`;
        const span = { from: anchorDate, to: addDays(anchorDate, 4 * 366) };
        const periods = periodsOf(kind, 'anniversary', anchorDate, span);
        expect(periods[0]!.from).toBe(anchorDate);
        periods.forEach((period, k) => {
          const target = new Date(Date.UTC(year, month - 1 + k * MONTHS[kind], 1));
          const length = monthLength(target.getUTCFullYear(), target.getUTCMonth() + 1);
          expect(period.from).toBe(isoOf(dayOf(target.toISOString().slice(0, 10)) + Math.min(dayOfMonth, length) - 1));
        });
      }),
    );
  });
});

describe('proration, for any amount and any split of a period', () => {
  const currency = fc.constantFrom('USD', 'JPY', 'KWD');
  const period = fc.tuple(recurring, anchor, day).map(([kind, anchorKind, anchorDate]) => periodsOf(kind, anchorKind, anchorDate, { from: anchorDate, to: anchorDate })[0]!);
  // Amounts with up to 4 decimals, so some have more decimals than their currency.
  const amount = fc.tuple(fc.integer({ min: 0, max: 1_000_000_000 }), fc.integer({ min: 0, max: 4 })).map(([units, places]) => new Decimal(units).dividedBy(new Decimal(10).pow(places)).toFixed());
  const cuts = fc.uniqueArray(fc.integer({ min: 1, max: 365 }), { maxLength: 8 });
  const suspensions = fc.array(fc.tuple(fc.integer({ min: 0, max: 366 }), fc.integer({ min: 0, max: 60 }), fc.boolean()), { maxLength: 3 });

  it('the parts never add up to more than the whole, add up to exactly the whole without suspensions, and each is within a minor unit of its exact share', () => {
    fc.assert(
      fc.property(amount, currency, period, cuts, suspensions, (fee, code, whole, cutDays, suspended) => {
        const n = lengthOf(whole);
        const bounds = [0, ...cutDays.filter((c) => c < n).sort((a, b) => a - b), n];
        const parts = bounds.slice(1).map((end, i) => ({ from: addDays(whole.from, bounds[i]!), to: addDays(whole.from, end - 1) }));
        const pauses: Suspension[] = suspended.map(([start, length, open]) => ({ from: addDays(whole.from, start), to: open ? null : addDays(whole.from, start + length) }));
        const unit = new Decimal(10).pow(-MINOR[code]!);
        const rounded = new Decimal(fee).toDecimalPlaces(MINOR[code]!, Decimal.ROUND_HALF_UP);
        const sum = (ranges: DayRange[], s: Suspension[]) => ranges.reduce((total, part) => total.plus(prorate(fee, code, whole, part, s).amount), new Decimal(0));

        expect(sum(parts, []).equals(rounded)).toBe(true);
        expect(sum(parts, pauses).lte(rounded)).toBe(true);
        // Suspended days and billed days together are the whole: nothing is lost or counted twice.
        expect(sum(parts, pauses).equals(prorate(fee, code, whole, whole, pauses).amount)).toBe(true);
        for (const part of parts) {
          const share = prorate(fee, code, whole, part, []);
          expect(share.days).toBe(lengthOf(part));
          expect(new Decimal(share.amount).minus(new Decimal(fee).times(share.days).dividedBy(n)).abs().lte(unit)).toBe(true);
        }
        // A part from the period's first day is the plain half-up rounding of amount × days / days in period.
        const head = prorate(fee, code, whole, parts[0]!, []);
        expect(head.amount).toBe(new Decimal(fee).times(head.days).dividedBy(n).toDecimalPlaces(MINOR[code]!, Decimal.ROUND_HALF_UP).toFixed(MINOR[code]!));
      }),
    );
  });
});
