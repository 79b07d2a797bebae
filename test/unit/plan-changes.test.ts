import fc from 'fast-check';
import { addDays, prorate, type BillingAnchor, type BillingPeriodKind, type DayRange, type Suspension } from '../../src/domain/billing-periods';
import { feesDue, type FeeCharged, type RatingTerms } from '../../src/domain/rating';
import { AppError } from '../../src/domain/errors';
import { Decimal } from '../../src/domain/money';
import { assertChangeDate, periodEndChangeDate, startsPeriod, unusedFees } from '../../src/domain/plan-changes';

const DAY_MS = 86_400_000;
const dayOf = (iso: string) => Date.parse(`${iso}T00:00:00Z`) / DAY_MS;
const MINOR: Record<string, number> = { USD: 2, JPY: 0, KWD: 3 };

describe('unusedFees', () => {
  const january = { from: '2026-01-01', to: '2026-01-31' };

  it('when Basic (30.00 a month) billed for January gives way to Pro on 11 January, then 21 of 31 days are credited: 30.00 − 9.68', () => {
    const [credit] = unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: '30.00' }], '2026-01-11', 'USD');
    expect(credit).toMatchObject({ from: '2026-01-11', to: '2026-01-31', days: 21, periodDays: 31, amount: '20.32' });
    // What the line keeps is what a line for 1–10 January alone would have charged.
    expect(new Decimal('30.00').minus(credit!.amount).toFixed(2)).toBe(prorate('30', 'USD', january, { from: '2026-01-01', to: '2026-01-10' }).amount);
  });

  it('when the line was billed for days after the change only, then all of it is credited; before, none', () => {
    const february = { from: '2026-02-01', to: '2026-02-28' };
    expect(unusedFees([{ period: february, charged: [february], fullAmount: '28', creditable: '28' }], '2026-01-20', 'USD').map((credit) => credit.amount)).toEqual(['28.00']);
    expect(unusedFees([{ period: january, charged: [january], fullAmount: '31', creditable: '31' }], '2026-02-01', 'USD')).toEqual([]);
  });

  it('when credit notes have given back part of the line, then the credit never takes more than is left of it', () => {
    const [credit] = unusedFees([{ period: january, charged: [january], fullAmount: '31', creditable: '5.00' }], '2026-01-11', 'USD');
    expect(credit!.amount).toBe('5.00');
    expect(unusedFees([{ period: january, charged: [january], fullAmount: '31', creditable: '0' }], '2026-01-11', 'USD')).toEqual([]);
  });

  it('when the plan already ends before the line does (an earlier change), then only the days it still serves are credited', () => {
    // Changed once from 21 January (ending the plan on 20 January), then again from 11 January: the second
    // change credits 11–20 January only, so that together the two credit 11–31 January once.
    const first = unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: '30.00' }], '2026-01-21', 'USD');
    const second = unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: new Decimal('30').minus(first[0]!.amount).toFixed() }], '2026-01-11', 'USD', '2026-01-20');
    expect([first[0]!.amount, second[0]!.amount, second[0]!.to]).toEqual(['10.65', '9.67', '2026-01-20']);
    expect(new Decimal(first[0]!.amount).plus(second[0]!.amount).toFixed(2)).toBe(unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: '30' }], '2026-01-11', 'USD')[0]!.amount);
  });

  it('when a coupon took 10 % off the line, then the credit is 90 % of the unused part, never the list price', () => {
    const [credit] = unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: '27.00', paidShare: '0.9' }], '2026-01-11', 'USD');
    expect(credit!.amount).toBe('18.29');
    expect(unusedFees([{ period: january, charged: [january], fullAmount: '30', creditable: '0', paidShare: '0' }], '2026-01-11', 'USD')).toEqual([]);
  });

  it('when a suspension known at the billing left days out of the line, then those days were never charged, and are not credited', () => {
    // Suspended from 21 January when January was billed: the line charged 1–20 January.
    const billed = prorate('31', 'USD', january, january, [{ from: '2026-01-21', to: null }]);
    expect(billed.amount).toBe('20.00');
    const credits = unusedFees([{ period: january, charged: [{ from: '2026-01-01', to: '2026-01-20' }], fullAmount: '31', creditable: billed.amount }], '2026-01-11', 'USD');
    expect(credits.map((credit) => [credit.from, credit.to, credit.amount, credit.days])).toEqual([['2026-01-11', '2026-01-20', '10.00', 10]]);
    // Suspended from 5 to 10 January, then resumed: the line charged 1–4 and 11–31 January, and a change
    // from 3 January gives back those runs alone, 2 + 21 days.
    const split = [{ from: '2026-01-01', to: '2026-01-04' }, { from: '2026-01-11', to: '2026-01-31' }];
    const [credit] = unusedFees([{ period: january, charged: split, fullAmount: '31', creditable: '25.00' }], '2026-01-03', 'USD');
    expect([credit!.from, credit!.to, credit!.amount, credit!.days]).toEqual(['2026-01-03', '2026-01-31', '23.00', 23]);
  });

  it('when the contract was suspended after the line was billed, then the days the change gives up were paid, and are credited in full', () => {
    // 300.00 for November, billed on 1 November; suspended from 10 November (still open); the plan changes
    // on 20 November. The line paid for 20–30 November: all of it comes back, 300.00 − round(300 × 19 / 30).
    const november = { from: '2026-11-01', to: '2026-11-30' };
    const [credit] = unusedFees([{ period: november, charged: [november], fullAmount: '300', creditable: '300.00' }], '2026-11-20', 'USD');
    expect(credit).toMatchObject({ from: '2026-11-20', to: '2026-11-30', days: 11, periodDays: 30, amount: '110.00' });
    // What the line keeps is what a line for 1–19 November alone charged: the suspended days before the change
    // stay paid, as they would have without the change.
    expect(new Decimal('300.00').minus(credit!.amount).toFixed(2)).toBe(prorate('300', 'USD', november, { from: '2026-11-01', to: '2026-11-19' }).amount);
  });
});

describe('when a change may take effect', () => {
  const monthly = { billingPeriod: 'monthly' as const, billingAnchor: 'calendar' as const, startDate: '2026-01-15' };

  it('period_end is the day after the period that holds today, or after the first period before the start', () => {
    expect(periodEndChangeDate(monthly, '2026-03-10')).toBe('2026-04-01');
    expect(periodEndChangeDate(monthly, '2025-12-01')).toBe('2026-02-01');
    expect(periodEndChangeDate({ ...monthly, billingAnchor: 'anniversary' }, '2026-03-10')).toBe('2026-03-15');
    expect(() => periodEndChangeDate({ ...monthly, billingPeriod: 'one_time' }, '2026-03-10')).toThrow(AppError);
  });

  it('startsPeriod knows calendar and anniversary starts', () => {
    expect(startsPeriod(monthly, '2026-02-01')).toBe(true);
    expect(startsPeriod(monthly, '2026-02-15')).toBe(false);
    expect(startsPeriod({ ...monthly, billingAnchor: 'anniversary' }, '2026-02-15')).toBe(true);
  });

  it('a change keeps a day of the old plan, starts before the contract ends, and never reaches back over usage invoiced', () => {
    const bounds = { startDate: '2026-01-15', endDate: null, contractEndDate: '2026-12-31', arrearsBilledThrough: '2026-02-28' };
    const refusal = (change: () => void) => {
      try {
        change();
        return undefined;
      } catch (error) {
        return error instanceof AppError ? [error.kind, error.items.map((item) => item.message).join('; ')] : error;
      }
    };
    expect(refusal(() => assertChangeDate(bounds, '2026-01-15'))).toEqual(['validation', "must be after the contract plan's start 2026-01-15"]);
    expect(refusal(() => assertChangeDate(bounds, '2027-01-01'))).toEqual(['validation', "must not be after the contract's end 2026-12-31"]);
    expect(refusal(() => assertChangeDate(bounds, '2026-02-28'))).toEqual(['conflict', "the plan's usage is invoiced through 2026-02-28: a change can take effect from 2026-03-01"]);
    expect(refusal(() => assertChangeDate({ ...bounds, endDate: '2026-05-31' }, '2026-06-01'))).toEqual(['validation', 'the contract plan ends on 2026-05-31: a change takes effect by then']);
    expect(refusal(() => assertChangeDate({ ...bounds, endDate: '9999-12-31', contractEndDate: null }, '9999-12-31'))).toBeUndefined();
    expect(refusal(() => assertChangeDate(bounds, '2026-03-01'))).toBeUndefined();
  });
});

// ---- a model of a contract over a sequence of runs, plan changes, undos, credit notes and suspensions

interface Plan {
  fee: string;
  kind: Exclude<BillingPeriodKind, 'one_time'>;
}

interface ContractPlan {
  plan: number;
  start: string;
  end: string | null;
  billed: FeeCharged[];
}

interface Line {
  contractPlan: ContractPlan;
  period: DayRange;
  /** The runs of days the line charged: a suspension known when it was billed splits it. */
  runs: DayRange[];
  charged: string;
  /** Given back by credit notes, and by plan changes. */
  notes: Decimal;
  changes: Decimal;
}

type Action =
  | { kind: 'run'; advance: number }
  | { kind: 'change'; after: number; plan: number }
  | { kind: 'undo' }
  | { kind: 'note'; line: number; share: number }
  | { kind: 'suspend'; after: number }
  | { kind: 'resume'; after: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('run' as const), advance: fc.integer({ min: 0, max: 70 }) }),
  fc.record({ kind: fc.constant('change' as const), after: fc.integer({ min: 1, max: 150 }), plan: fc.nat(3) }),
  fc.constant({ kind: 'undo' as const }),
  fc.record({ kind: fc.constant('note' as const), line: fc.nat(30), share: fc.double({ min: 0.01, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('suspend' as const), after: fc.integer({ min: 0, max: 60 }) }),
  fc.record({ kind: fc.constant('resume' as const), after: fc.integer({ min: 0, max: 60 }) }),
);

const amountFor = (currency: string) =>
  fc.integer({ min: 1, max: 10_000_000 }).map((minor) => new Decimal(minor).times(new Decimal(10).pow(-MINOR[currency]!)).toFixed(MINOR[currency]!));

const scenario = fc.constantFrom('USD', 'JPY', 'KWD').chain((currency) =>
  fc.record({
    currency: fc.constant(currency),
    anchor: fc.constantFrom<BillingAnchor>('calendar', 'anniversary'),
    start: fc.integer({ min: dayOf('2020-01-01'), max: dayOf('2030-12-31') }).map((day) => new Date(day * DAY_MS).toISOString().slice(0, 10)),
    length: fc.integer({ min: 30, max: 500 }),
    plans: fc.array(fc.record({ fee: amountFor(currency), kind: fc.constantFrom<Plan['kind']>('monthly', 'quarterly', 'yearly') }), { minLength: 4, maxLength: 4 }),
    actions: fc.array(action, { maxLength: 25 }),
  }),
);

/**
 * Plays the scenario as the services do: runs bill what the rating engine says is due; a change ends the contract
 * plan the day before its date and credits `unusedFees` of the lines billed; an undo before the next run
 * puts the plan back; a credit note gives back part of a line; a suspension opens on a day from the last
 * run on (so it may cover days already billed in advance) and closes the day before its resume, or goes
 * if it would cover no day. Then a last run bills every day left.
 */
function play(s: { currency: string; anchor: BillingAnchor; start: string; length: number; plans: Plan[]; actions: Action[] }) {
  const end = addDays(s.start, s.length - 1);
  const contractPlans: ContractPlan[] = [{ plan: 0, start: s.start, end: null, billed: [] }];
  const lines: Line[] = [];
  const suspensions: Suspension[] = [];
  let clock = s.start;
  let pending: { from: ContractPlan; previousEnd: string | null; credits: Array<{ line: Line; amount: string }> } | null = null;
  const terms = (cp: ContractPlan): RatingTerms => ({
    currency: s.currency,
    anchor: s.anchor,
    startDate: cp.start,
    endDate: cp.end !== null && cp.end < end ? cp.end : end,
    periods: [{ effectiveFrom: null, billingPeriod: s.plans[cp.plan]!.kind }],
    items: [{ id: `fee-${cp.plan}`, name: 'Fee', pricingModel: 'flat', unitPrice: s.plans[cp.plan]!.fee, effectiveFrom: null, effectiveTo: null }],
    suspensions,
  });
  const runOn = (date: string) => {
    let made = 0;
    for (const cp of contractPlans) {
      for (const { charges } of feesDue(terms(cp), { fees: cp.billed, usage: [] }, date)) {
        cp.billed.push(...charges);
        const charged = charges.reduce((sum, charge) => sum.plus(charge.amount), new Decimal(0)).toFixed();
        lines.push({ contractPlan: cp, period: charges[0]!.period, runs: charges.map(({ from, to }) => ({ from, to })), charged, notes: new Decimal(0), changes: new Decimal(0) });
        made += 1;
      }
    }
    // The run's invoices credit the change: it can no longer be undone.
    if (made > 0) pending = null;
  };

  for (const step of s.actions) {
    const current = contractPlans[contractPlans.length - 1]!;
    const open = suspensions.find((suspension) => suspension.to === null);
    if (step.kind === 'run') {
      clock = addDays(clock, step.advance) > end ? end : addDays(clock, step.advance);
      runOn(clock);
    } else if (step.kind === 'change') {
      const effective = addDays(current.start, step.after);
      if (effective > end) continue;
      const billed = lines.filter((line) => line.contractPlan === current);
      const credits = unusedFees(
        billed.map((line) => ({ line, period: line.period, charged: line.runs, fullAmount: s.plans[current.plan]!.fee, creditable: new Decimal(line.charged).minus(line.notes).minus(line.changes).toFixed() })),
        effective,
        s.currency,
      );
      for (const credit of credits) credit.fee.line.changes = credit.fee.line.changes.plus(credit.amount);
      pending = { from: current, previousEnd: current.end, credits: credits.map((credit) => ({ line: credit.fee.line, amount: credit.amount })) };
      current.end = addDays(effective, -1);
      contractPlans.push({ plan: step.plan, start: effective, end: null, billed: [] });
    } else if (step.kind === 'undo') {
      if (!pending) continue;
      for (const credit of pending.credits) credit.line.changes = credit.line.changes.minus(credit.amount);
      pending.from.end = pending.previousEnd;
      contractPlans.pop();
      pending = null;
    } else if (step.kind === 'suspend') {
      const from = addDays(clock, step.after);
      const last = suspensions[suspensions.length - 1];
      if (open || from > end || (last && last.to! >= from)) continue;
      suspensions.push({ from, to: null });
    } else if (step.kind === 'resume') {
      if (!open) continue;
      const day = addDays(clock > open.from ? clock : open.from, step.after);
      if (day === open.from) suspensions.pop();
      else open.to = addDays(day, -1);
    } else if (lines.length > 0) {
      const line = lines[step.line % lines.length]!;
      const left = new Decimal(line.charged).minus(line.notes).minus(line.changes);
      const note = left.times(step.share).toDecimalPlaces(MINOR[s.currency]!, Decimal.ROUND_DOWN);
      if (note.greaterThan(0)) line.notes = line.notes.plus(note);
    }
  }
  runOn(end);
  return { contractPlans, lines, suspensions, end };
}

describe('property: over any sequence of plan changes, undos, credit notes and suspensions', () => {
  it('each day of service is charged the price in force that day, to the minor unit per run of days; no line is credited beyond what it charged; no day is paid twice', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { contractPlans, lines, suspensions, end } = play(s);
        const minor = new Decimal(10).pow(-MINOR[s.currency]!);
        const lastOf = (cp: ContractPlan) => (cp.end !== null && cp.end < end ? cp.end : end);
        const length = (run: DayRange) => dayOf(run.to) - dayOf(run.from) + 1;
        for (const line of lines) {
          const cp = line.contractPlan;
          const plan = s.plans[cp.plan]!;
          // The days the line charged that its plan still serves; the rest its plan gave up.
          const served = line.runs.map((run) => ({ from: run.from, to: run.to < lastOf(cp) ? run.to : lastOf(cp) })).filter((run) => run.from <= run.to);
          const days = served.reduce((sum, run) => sum + length(run), 0);
          // What a line for those days, alone, charges.
          const expected = served.reduce((sum, run) => sum.plus(prorate(plan.fee, s.currency, line.period, run).amount), new Decimal(0));
          const kept = new Decimal(line.charged).minus(line.changes);
          if (line.notes.isZero()) {
            expect(kept.toFixed()).toBe(expected.toFixed());
            // The price in force, day by day: the fee over the period's days, exactly, within a minor unit per run.
            const periodDays = length(line.period);
            expect(kept.minus(new Decimal(plan.fee).times(days).dividedBy(periodDays)).abs().lessThanOrEqualTo(minor.times(Math.max(1, served.length)))).toBe(true);
          } else {
            // A credit note that left too little for the change's whole credit: the customer still pays no more.
            expect(kept.minus(line.notes).lessThanOrEqualTo(expected)).toBe(true);
          }
          expect(line.changes.greaterThanOrEqualTo(0)).toBe(true);
          expect(line.notes.plus(line.changes).lessThanOrEqualTo(line.charged)).toBe(true);
        }
        // Every day the contract ran and was not suspended is paid once, by the plan in force that day: a plan's
        // charges for days it gave up are credited in full above, so a day is paid by the plan serving it or by
        // none (a day suspended before it was billed).
        const suspended = (day: number) => suspensions.some((suspension) => dayOf(suspension.from) <= day && (suspension.to === null || day <= dayOf(suspension.to)));
        for (const cp of contractPlans) {
          if (lastOf(cp) < cp.start) continue;
          const paid = new Map<number, number>();
          for (const line of lines.filter((candidate) => candidate.contractPlan === cp)) {
            for (const run of line.runs) for (let day = dayOf(run.from); day <= dayOf(run.to); day += 1) paid.set(day, (paid.get(day) ?? 0) + 1);
          }
          const wrong: string[] = [];
          for (let day = dayOf(cp.start); day <= dayOf(lastOf(cp)); day += 1) {
            const times = paid.get(day) ?? 0;
            if (times > 1 || (times === 0 && !suspended(day))) wrong.push(`${new Date(day * DAY_MS).toISOString().slice(0, 10)} paid ${times} times`);
          }
          expect(wrong).toEqual([]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
