import fc from 'fast-check';
import { Decimal } from '../../src/domain/money';
import { recogniseStraightLine } from '../../src/domain/revenue';

describe('straight-line revenue recognition', () => {
  it('when a period covers whole months, then each month gets its share by day', () => {
    // 1 Oct to 30 Nov: 31 + 30 = 61 days of 610.00
    expect(recogniseStraightLine('610', 'USD', '2026-10-01', '2026-11-30')).toEqual([
      { month: '2026-10-01', days: 31, amount: '310.00' },
      { month: '2026-11-01', days: 30, amount: '300.00' },
    ]);
  });

  it('when the period lies in the first century, then its months are of that century', () => {
    expect(recogniseStraightLine('610', 'USD', '0050-10-01', '0050-11-30')).toEqual([
      { month: '0050-10-01', days: 31, amount: '310.00' },
      { month: '0050-11-01', days: 30, amount: '300.00' },
    ]);
  });

  it('when shares do not divide evenly, then the cents still add up to the amount', () => {
    const slices = recogniseStraightLine('100', 'USD', '2026-01-15', '2026-03-14');
    expect(slices.map((s) => s.month)).toEqual(['2026-01-01', '2026-02-01', '2026-03-01']);
    expect(slices.reduce((sum, s) => sum.plus(s.amount), new Decimal(0)).toFixed(2)).toBe('100.00');
  });

  it('when the period is a single day, then one slice holds everything', () => {
    expect(recogniseStraightLine('9.99', 'EUR', '2026-02-28', '2026-02-28')).toEqual([{ month: '2026-02-01', days: 1, amount: '9.99' }]);
  });

  const day = fc.integer({ min: 0, max: 3 * 365 }).map((n) => new Date(Date.UTC(2025, 0, 1) + n * 86_400_000).toISOString().slice(0, 10));
  const cents = fc.integer({ min: -10_000_000, max: 10_000_000 });

  it('when any amount is spread over any period, then slices add up exactly and each is within a minor unit of its exact share', () => {
    fc.assert(
      fc.property(cents, day, day, fc.constantFrom('USD', 'JPY', 'KWD'), (c, a, b, currency) => {
        const [from, to] = a <= b ? [a, b] : [b, a];
        const amount = new Decimal(c).dividedBy(100).toFixed(2);
        const slices = recogniseStraightLine(amount, currency, from, to);
        const total = new Decimal(slices.reduce((sum, s) => sum.plus(s.amount), new Decimal(0)));
        const rounded = new Decimal(amount).toDecimalPlaces({ USD: 2, JPY: 0, KWD: 3 }[currency], Decimal.ROUND_HALF_UP);
        expect(total.equals(rounded)).toBe(true);
        const totalDays = slices.reduce((sum, s) => sum + s.days, 0);
        expect(totalDays).toBe((Date.parse(to) - Date.parse(from)) / 86_400_000 + 1);
        const unit = new Decimal(10).pow(-{ USD: 2, JPY: 0, KWD: 3 }[currency]);
        for (const slice of slices) expect(new Decimal(slice.amount).minus(rounded.times(slice.days).dividedBy(totalDays)).abs().lte(unit)).toBe(true);
      }),
    );
  });
});
