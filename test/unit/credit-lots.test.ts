import fc from 'fast-check';
import { drawFrom, drawOrder, drawPreferring, giveBack, outstanding, type CreditLot, type Draw } from '../../src/domain/credit-lots';
import { Decimal } from '../../src/domain/money';

const cents = (value: number) => new Decimal(value).dividedBy(100).toFixed(2);
const total = (draws: readonly Draw[]) => draws.reduce((sum, draw) => sum.plus(draw.amount), new Decimal(0));

const lot: fc.Arbitrary<CreditLot> = fc.record({
  id: fc.uuid(),
  remaining: fc.integer({ min: 0, max: 100_000 }).map(cents),
  expiresAt: fc.option(fc.integer({ min: 0, max: 1000 }).map((day) => new Date(Date.UTC(2027, 0, 1) + day * 86_400_000).toISOString()), { nil: null }),
  createdAt: fc.integer({ min: 0, max: 1000 }).map((day) => new Date(Date.UTC(2026, 0, 1) + day * 86_400_000).toISOString()),
});
const lots = fc.uniqueArray(lot, { selector: (candidate) => candidate.id, maxLength: 8 });

describe('credit lots', () => {
  it('takes the lot that expires first, then the oldest; lots that never expire last', () => {
    const order = drawOrder([
      { id: 'never-old', remaining: '1', expiresAt: null, createdAt: '2026-01-01T00:00:00.000Z' },
      { id: 'late', remaining: '1', expiresAt: '2027-06-01T00:00:00.000Z', createdAt: '2026-01-01T00:00:00.000Z' },
      { id: 'soon-new', remaining: '1', expiresAt: '2027-01-01T00:00:00.000Z', createdAt: '2026-03-01T00:00:00.000Z' },
      { id: 'soon-old', remaining: '1', expiresAt: '2027-01-01T00:00:00.000Z', createdAt: '2026-02-01T00:00:00.000Z' },
    ]);
    expect(order.map((candidate) => candidate.id)).toEqual(['soon-old', 'soon-new', 'late', 'never-old']);
    expect(drawFrom(order, '2.50')).toEqual([
      { lotId: 'soon-old', amount: '-1' },
      { lotId: 'soon-new', amount: '-1' },
      { lotId: 'late', amount: '-0.5' },
    ]);
  });

  it('takes credit back from the lots it went to, each at most what it got, before any other; the rest in draw order', () => {
    const open: CreditLot[] = [
      { id: 'never', remaining: '100', expiresAt: null, createdAt: '2026-01-01T00:00:00.000Z' },
      { id: 'jan', remaining: '20', expiresAt: '2027-01-01T00:00:00.000Z', createdAt: '2026-01-02T00:00:00.000Z' },
      { id: 'feb', remaining: '15', expiresAt: '2027-02-01T00:00:00.000Z', createdAt: '2026-01-03T00:00:00.000Z' },
    ];
    // A cancellation gave 59.50 back: 24.50 to the lot that never expires (taken last), 15 and 20 to the others.
    const given = [
      { lotId: 'never', amount: '24.5' },
      { lotId: 'feb', amount: '15' },
      { lotId: 'jan', amount: '20' },
    ];
    expect(drawPreferring(open, given, '59.50')).toEqual([
      { lotId: 'never', amount: '-24.5' },
      { lotId: 'feb', amount: '-15' },
      { lotId: 'jan', amount: '-20' },
    ]);
    // What those lots no longer hold (the January lot was spent down to 5) comes from the lots in draw order.
    const spent = open.map((candidate) => (candidate.id === 'jan' ? { ...candidate, remaining: '5' } : candidate));
    expect(total(drawPreferring(spent, given, '59.50'))).toEqual(new Decimal('-59.5'));
    expect(drawPreferring(spent, given, '59.50')).toEqual([
      { lotId: 'never', amount: '-39.5' },
      { lotId: 'feb', amount: '-15' },
      { lotId: 'jan', amount: '-5' },
    ]);
  });

  it('property: a draw takes what was asked or all there is, never more than a lot holds, emptying lots in draw order', () => {
    fc.assert(
      fc.property(lots, fc.integer({ min: 1, max: 1_000_000 }).map(cents), (held, amount) => {
        const draws = drawFrom(held, amount);
        const there = held.reduce((sum, candidate) => sum.plus(candidate.remaining), new Decimal(0));
        expect(total(draws).negated().toFixed(2)).toBe(Decimal.min(there, amount).toFixed(2));
        const byId = new Map(held.map((candidate) => [candidate.id, candidate]));
        for (const draw of draws) {
          expect(new Decimal(draw.amount).isNegative()).toBe(true);
          expect(new Decimal(draw.amount).negated().lessThanOrEqualTo(byId.get(draw.lotId)!.remaining)).toBe(true);
        }
        // Every lot before the last one drawn, in draw order, is emptied.
        const order = drawOrder(held).filter((candidate) => new Decimal(candidate.remaining).greaterThan(0));
        draws.slice(0, -1).forEach((draw, index) => {
          expect(draw.lotId).toBe(order[index]!.id);
          expect(new Decimal(draw.amount).negated().toFixed(2)).toBe(new Decimal(order[index]!.remaining).toFixed(2));
        });
      }),
    );
  });

  it('property: over grants, takes and give-backs, the credit taken never exceeds the balance, the lots always hold the balance, and what is given back returns to its own lots', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('grant' as const), amount: fc.integer({ min: 1, max: 10_000 }), expires: fc.option(fc.nat(100), { nil: null }) }),
      fc.record({ kind: fc.constant('take' as const), most: fc.integer({ min: 1, max: 20_000 }) }),
      fc.record({ kind: fc.constant('giveBack' as const), which: fc.nat(), share: fc.double({ min: 0.01, max: 1, noNaN: true }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const held: CreditLot[] = [];
        let balance = new Decimal(0);
        // Each invoice's entries, as the ledger keeps them.
        const invoices: Draw[][][] = [];
        steps.forEach((next, index) => {
          if (next.kind === 'grant') {
            const expiresAt = next.expires === null ? null : new Date(Date.UTC(2027, 0, 1) + next.expires * 86_400_000).toISOString();
            held.push({ id: `lot-${index}`, remaining: cents(next.amount), expiresAt, createdAt: new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString() });
            balance = balance.plus(cents(next.amount));
          } else if (next.kind === 'take') {
            const taken = Decimal.min(balance, cents(next.most));
            if (taken.isZero()) return;
            const draws = drawFrom(held, taken);
            expect(total(draws).negated().toFixed(2)).toBe(taken.toFixed(2));
            for (const draw of draws) {
              const from = held.find((candidate) => candidate.id === draw.lotId)!;
              from.remaining = new Decimal(from.remaining).plus(draw.amount).toFixed();
            }
            balance = balance.minus(taken);
            invoices.push([draws]);
          } else if (invoices.length > 0) {
            const entries = invoices[next.which % invoices.length]!;
            const owed = outstanding(entries);
            const due = [...owed.values()].reduce((sum, amount) => sum.plus(amount), new Decimal(0));
            const back = giveBack(owed, due.times(next.share).toDecimalPlaces(2, Decimal.ROUND_DOWN));
            for (const draw of back) {
              expect(new Decimal(draw.amount).lessThanOrEqualTo(owed.get(draw.lotId)!)).toBe(true);
              const to = held.find((candidate) => candidate.id === draw.lotId)!;
              to.remaining = new Decimal(to.remaining).plus(draw.amount).toFixed();
            }
            balance = balance.plus(total(back));
            entries.push(back);
          }
          expect(balance.isNegative()).toBe(false);
          expect(held.reduce((sum, candidate) => sum.plus(candidate.remaining), new Decimal(0)).toFixed(2)).toBe(balance.toFixed(2));
          for (const candidate of held) expect(new Decimal(candidate.remaining).isNegative()).toBe(false);
        });
        // Given back in full, every invoice owes its lots nothing.
        for (const entries of invoices) {
          const owed = outstanding(entries);
          const back = giveBack(owed, [...owed.values()].reduce((sum, amount) => sum.plus(amount), new Decimal(0)));
          expect(outstanding([...entries, back]).size).toBe(0);
        }
      }),
    );
  });
});
