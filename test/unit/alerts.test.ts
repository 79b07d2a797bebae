import fc from 'fast-check';
import { calendarMonthAt, directionOf, newlyCrossed, periodAt, periodsSpanning, type BillingSchedule } from '../../src/domain/alerts';

/** A decimal with up to 4 places, as the thresholds column holds them, from an integer of ten-thousandths. */
const fromUnits = (units: bigint) => {
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(5, '0');
  return `${sign}${digits.slice(0, -4)}.${digits.slice(-4)}`;
};

describe('newlyCrossed', () => {
  it('upward: the thresholds the value reached that have not fired, a value exactly on one included', () => {
    expect(newlyCrossed(['100', '200', '300'], '99.9999', 'up', [])).toEqual([]);
    expect(newlyCrossed(['100', '200', '300'], '200', 'up', [])).toEqual(['100', '200']);
    expect(newlyCrossed(['100', '200', '300'], '250', 'up', ['100.0000'])).toEqual(['200']);
    expect(newlyCrossed(['100', '200', '300'], '1000', 'up', ['100', '200', '300'])).toEqual([]);
  });

  it('downward: the thresholds the balance fell to or below that have not fired', () => {
    expect(newlyCrossed(['10', '50', '100'], '100.0001', 'down', [])).toEqual([]);
    expect(newlyCrossed(['10', '50', '100'], '50', 'down', [])).toEqual(['50', '100']);
    expect(newlyCrossed(['10', '50', '100'], '-5', 'down', ['100'])).toEqual(['10', '50']);
    expect(newlyCrossed(['10', '50', '100'], '0', 'down', ['10.0', '50', '100'])).toEqual([]);
  });

  it('a balance runs down, usage and spend grow', () => {
    expect(directionOf('credit_balance')).toBe('down');
    expect(directionOf('usage')).toBe('up');
    expect(directionOf('spend')).toBe('up');
  });

  it('agrees with integer arithmetic on any thresholds, value and fired set', () => {
    const units = fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n });
    fc.assert(
      fc.property(fc.uniqueArray(units, { maxLength: 20 }), units, fc.constantFrom('up' as const, 'down' as const), fc.array(fc.boolean(), { maxLength: 20 }), (thresholds, value, direction, firedFlags) => {
        const fired = thresholds.filter((_, index) => firedFlags[index]);
        const expected = thresholds.filter((threshold) => (direction === 'up' ? value >= threshold : value <= threshold) && !fired.includes(threshold));
        expect(newlyCrossed(thresholds.map(fromUnits), fromUnits(value), direction, fired.map(fromUnits))).toEqual(expected.map(fromUnits));
      }),
    );
  });

  it('firing what it answers, then asking again with the same value, answers nothing (once per threshold)', () => {
    const units = fc.bigInt({ min: 0n, max: 10n ** 9n });
    fc.assert(
      fc.property(fc.uniqueArray(units, { minLength: 1, maxLength: 20 }), fc.array(units, { minLength: 1, maxLength: 10 }), (thresholds, values) => {
        const fired: string[] = [];
        let max = 0n;
        for (const value of values) {
          fired.push(...newlyCrossed(thresholds.map(fromUnits), fromUnits(value), 'up', fired));
          if (value > max) max = value;
          expect(newlyCrossed(thresholds.map(fromUnits), fromUnits(value), 'up', fired)).toEqual([]);
        }
        // Each threshold the largest value reached fired exactly once.
        expect([...fired].sort()).toEqual(thresholds.filter((threshold) => threshold <= max).map(fromUnits).sort());
      }),
    );
  });
});

describe('periods', () => {
  it("without a contract: the calendar month of the organisation's zone", () => {
    // 23:30 UTC on 30 November is already December in Berlin.
    const period = calendarMonthAt(new Date('2026-11-30T23:30:00Z'), 'Europe/Berlin');
    expect(period).toEqual({ start: new Date('2026-11-30T23:00:00Z'), end: new Date('2026-12-31T23:00:00Z') });
    expect(periodAt(new Date('2026-11-15T12:00:00Z'), 'UTC', [])).toEqual({ start: new Date('2026-11-01T00:00:00Z'), end: new Date('2026-12-01T00:00:00Z') });
  });

  it("with a contract: the billing period of the plan in force, cut to the plan's days", () => {
    const quarterly: BillingSchedule = { kind: 'quarterly', anchor: 'anniversary', startDate: '2026-02-15', endDate: '2026-12-31' };
    expect(periodAt(new Date('2026-06-01T00:00:00Z'), 'UTC', [quarterly])).toEqual({ start: new Date('2026-05-15T00:00:00Z'), end: new Date('2026-08-15T00:00:00Z') });
    expect(periodAt(new Date('2026-12-01T00:00:00Z'), 'UTC', [quarterly])).toEqual({ start: new Date('2026-11-15T00:00:00Z'), end: new Date('2027-01-01T00:00:00Z') });
    // Before the plan, and for a one-time plan: the calendar month.
    expect(periodAt(new Date('2026-01-20T00:00:00Z'), 'UTC', [quarterly])).toEqual({ start: new Date('2026-01-01T00:00:00Z'), end: new Date('2026-02-01T00:00:00Z') });
    expect(periodAt(new Date('2026-03-20T00:00:00Z'), 'UTC', [{ kind: 'one_time', anchor: 'calendar', startDate: '2026-01-01', endDate: null }])).toEqual({
      start: new Date('2026-03-01T00:00:00Z'),
      end: new Date('2026-04-01T00:00:00Z'),
    });
  });

  it('the periods a span of usage touches, in order', () => {
    expect(periodsSpanning(new Date('2026-10-31T23:59:59Z'), new Date('2026-12-01T00:00:00Z'), 'UTC', []).map((period) => period.start.toISOString())).toEqual([
      '2026-10-01T00:00:00.000Z',
      '2026-11-01T00:00:00.000Z',
      '2026-12-01T00:00:00.000Z',
    ]);
    expect(periodsSpanning(new Date('2000-01-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z'), 'UTC', [])).toHaveLength(24);
  });
});
