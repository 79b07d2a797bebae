import fc from 'fast-check';
import { drawOrder, meteredValue, periodAt, periodStartDay, spanOf, type Grant, type PeriodUsage, type UsagePeriod } from '../../src/domain/entitlements';
import { dayIn } from '../../src/domain/zoned-days';

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham'];
const PERIODS: UsagePeriod[] = ['day', 'week', 'month', 'year'];
const instant = fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2030-12-31T00:00:00Z') }).map((ms) => new Date(ms));

describe('usage periods', () => {
  it('a monthly period runs from the anchor day of the month, or the month end where the month is shorter', () => {
    expect(periodStartDay('2026-01-31', 'month', 1)).toBe('2026-02-28');
    expect(periodStartDay('2026-01-31', 'month', 2)).toBe('2026-03-31');
    expect(periodStartDay('2024-02-29', 'year', 1)).toBe('2025-02-28');
    expect(periodStartDay('2026-03-15', 'month', -3)).toBe('2025-12-15');
    expect(periodStartDay('0050-01-31', 'month', 1)).toBe('0050-02-28');
  });

  it('starts and ends at local midnights in the zone', () => {
    const span = periodAt(new Date('2026-03-10T15:00:00Z'), 'month', 'Europe/Berlin', new Date('2026-04-02T12:00:00Z'));
    // 10 March is CET (UTC+1), 10 April CEST (UTC+2).
    expect(span.start.toISOString()).toBe('2026-03-09T23:00:00.000Z');
    expect(span.end.toISOString()).toBe('2026-04-09T22:00:00.000Z');
  });

  it('the period at any instant holds it, and its neighbours meet it end to end', () => {
    fc.assert(
      fc.property(instant, instant, fc.constantFrom(...PERIODS), fc.constantFrom(...ZONES), (anchor, at, period, zone) => {
        const span = periodAt(anchor, period, zone, at);
        expect(span.start.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(at.getTime()).toBeLessThan(span.end.getTime());
        const anchorDay = dayIn(zone, anchor);
        expect(spanOf(anchorDay, period, zone, span.index + 1).start).toEqual(span.end);
        expect(periodAt(anchor, period, zone, span.start).index).toBe(span.index);
        expect(periodAt(anchor, period, zone, span.end).index).toBe(span.index + 1);
      }),
      { numRuns: 500 },
    );
  });
});

/**
 * The oracle: usage is spent one unit at a time, in period order: from the period's limit while some is
 * left, then from the first grant in draw order that served the period and has some left, else overage.
 */
function oracle(limit: number, grants: readonly Grant[], periods: ReadonlyArray<PeriodUsage & { units: number }>, at: Date, soft: boolean) {
  const ordered = grants.filter((grant) => grant.effectiveAt <= at).sort(drawOrder);
  const left = new Map(ordered.map((grant) => [grant.id, Number(grant.amount)]));
  let usage = 0;
  let limitLeft = limit;
  let overage = 0;
  for (const period of periods) {
    usage = 0;
    limitLeft = limit;
    overage = 0;
    for (let unit = 0; unit < period.units; unit += 1) {
      usage += 1;
      if (limitLeft > 0) {
        limitLeft -= 1;
        continue;
      }
      const grant = ordered.find((g) => g.effectiveAt < period.end && (g.expiresAt === null || g.expiresAt > period.start) && left.get(g.id)! > 0);
      if (grant) left.set(grant.id, left.get(grant.id)! - 1);
      else overage += 1;
    }
  }
  const live = ordered.filter((g) => g.effectiveAt <= at && (g.expiresAt === null || g.expiresAt > at));
  const balance = limitLeft + live.reduce((sum, g) => sum + left.get(g.id)!, 0);
  return { usage: String(usage), balance: String(balance), overage: String(overage), hasAccess: soft || balance > 0 };
}

describe('metered value', () => {
  const t = (day: string) => new Date(`${day}T00:00:00Z`);

  it('1,000 a month with a grant of 500: usage beyond the limit burns the grant, then counts as overage', () => {
    const grant: Grant = { id: 'g1', amount: '500', effectiveAt: t('2026-11-01'), expiresAt: t('2027-01-01'), priority: 1 };
    const period = (usage: string): PeriodUsage[] => [{ start: t('2026-11-01'), end: t('2026-12-01'), usage }];
    const at = t('2026-11-20');
    expect(meteredValue({ limit: '1000', isSoftLimit: false, grants: [grant] }, period('1200'), at)).toMatchObject({ hasAccess: true, usage: '1200', balance: '300', overage: '0' });
    expect(meteredValue({ limit: '1000', isSoftLimit: false, grants: [grant] }, period('1600'), at)).toMatchObject({ hasAccess: false, balance: '0', overage: '100' });
    expect(meteredValue({ limit: '1000', isSoftLimit: true, grants: [grant] }, period('1600'), at)).toMatchObject({ hasAccess: true, balance: '0', overage: '100' });
    // Once the grant expired, what it had left is gone.
    expect(meteredValue({ limit: '1000', isSoftLimit: false, grants: [{ ...grant, expiresAt: t('2026-11-15') }] }, period('1200'), at)).toMatchObject({ balance: '0', hasAccess: false });
    // Usage corrected below zero leaves the whole limit and the grant, not more than the limit.
    expect(meteredValue({ limit: '1000', isSoftLimit: false, grants: [grant] }, period('-60'), at)).toMatchObject({ hasAccess: true, usage: '-60', balance: '1500', overage: '0' });
  });

  it('agrees with spending the usage one unit at a time', () => {
    const day = 86_400_000;
    const base = Date.parse('2026-01-01T00:00:00Z');
    const grantArb = fc.record({
      amount: fc.integer({ min: 0, max: 40 }),
      effective: fc.integer({ min: 0, max: 9 }),
      lasts: fc.option(fc.integer({ min: 1, max: 10 }), { nil: null }),
      priority: fc.integer({ min: 0, max: 2 }),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 30 }),
        fc.array(grantArb, { maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 9 }),
        fc.boolean(),
        (limit, grantSpecs, usages, atOffset, soft) => {
          // Periods of 10 days; `at` falls inside the last one.
          const periods = usages.map((units, index) => ({ start: new Date(base + index * 10 * day), end: new Date(base + (index + 1) * 10 * day), usage: String(units), units }));
          const at = new Date(periods.at(-1)!.start.getTime() + atOffset * day);
          const grants: Grant[] = grantSpecs.map((spec, index) => {
            const effectiveAt = new Date(base + spec.effective * 7 * day);
            return { id: `g${index}`, amount: String(spec.amount), effectiveAt, expiresAt: spec.lasts === null ? null : new Date(effectiveAt.getTime() + spec.lasts * 5 * day), priority: spec.priority };
          });
          const got = meteredValue({ limit: String(limit), isSoftLimit: soft, grants }, periods, at);
          const want = oracle(limit, grants, periods, at, soft);
          expect({ usage: got.usage, balance: got.balance, overage: got.overage, hasAccess: got.hasAccess }).toEqual(want);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
