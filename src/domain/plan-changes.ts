/**
 * Plan changes within a contract (docs/adjustments.md, "Plan changes"): the day a change takes effect, what
 * it may not undo, and what the old plan's in-advance fees, already billed, give back for the days from
 * the change on. Every date is a UTC calendar day `YYYY-MM-DD`; ranges include both ends.
 */
import { addDays, periodsOf, prorate, type BillingAnchor, type BillingPeriodKind, type DayRange } from './billing-periods';
import { AppError } from './errors';
import { Decimal, formatAmount, roundToMinor, toDecimal } from './money';

/** A fee line an invoice has billed in advance. */
export interface BilledFee {
  /** The whole billing period the line is part of. */
  period: DayRange;
  /**
   * The runs of days the line charged, in order, as the ledger records them: a suspension known when the
   * line was billed splits it, and its days were never charged.
   */
  charged: readonly DayRange[];
  /** The fee of the whole period. */
  fullAmount: string;
  /** What the line charged, less what credit notes and earlier changes have given back of it already. */
  creditable: string;
  /**
   * The share of the line the customer pays once the invoice's discounts on its plan item are taken off
   * (a coupon), from 0 to 1; absent: 1.
   */
  paidShare?: string;
}

/** The part of a billed fee that the days from the change on had paid for. */
export interface UnusedFee<T extends BilledFee> {
  fee: T;
  from: string;
  to: string;
  amount: string;
  /** Days credited (days the line charged) out of the period's days. */
  days: number;
  periodDays: number;
}

/**
 * For each fee billed for days from `effectiveDate` through `lastDay` (the last day the plan serves now;
 * null: open-ended), the part those days paid for: the fee prorated by the same rule that billed it (the
 * difference of `fee × days since the period's start / days in the period`, rounded, at the two ends of
 * each run of days the line charged from the change on). What the line keeps and what is credited
 * therefore add up to exactly what it charged, and the days before the change cost what a line billed for
 * them alone would have. The charged days are credited whatever suspensions say now: they were paid, and
 * a suspension that began after the line was billed does not unpay them. A discounted line gives back its
 * paid share of that part. Never more than what is left of the line to credit.
 */
export function unusedFees<T extends BilledFee>(fees: readonly T[], effectiveDate: string, currency: string, lastDay: string | null = null): Array<UnusedFee<T>> {
  const credits: Array<UnusedFee<T>> = [];
  for (const fee of fees) {
    const given = fee.charged
      .map((run) => ({ from: run.from > effectiveDate ? run.from : effectiveDate, to: lastDay !== null && lastDay < run.to ? lastDay : run.to }))
      .filter((run) => run.from <= run.to);
    if (given.length === 0) continue;
    const parts = given.map((run) => prorate(fee.fullAmount, currency, fee.period, run));
    const part = parts.reduce((sum, { amount }) => sum.plus(amount), new Decimal(0));
    const paid = fee.paidShare === undefined ? part : roundToMinor(part.times(fee.paidShare), currency);
    const amount = Decimal.min(paid, toDecimal(fee.creditable));
    if (amount.lessThanOrEqualTo(0)) continue;
    const days = parts.reduce((sum, run) => sum + run.days, 0);
    credits.push({ fee, from: given[0]!.from, to: given[given.length - 1]!.to, amount: formatAmount(amount, currency), days, periodDays: parts[0]!.periodDays });
  }
  return credits;
}

/** The schedule of a contract plan, as far as a change needs it. */
export interface PlanSchedule {
  billingPeriod: BillingPeriodKind;
  billingAnchor: BillingAnchor;
  /** The contract plan's start: anniversary periods repeat from it. */
  startDate: string;
}

function periodOf(schedule: PlanSchedule, day: string): DayRange {
  return periodsOf(schedule.billingPeriod, schedule.billingAnchor, schedule.startDate, { from: day, to: day })[0]!;
}

/**
 * `effectiveDate: "period_end"`: the day after the period that holds `today` (or the plan's first period,
 * if it has not started). A one-time plan has no period to end.
 */
export function periodEndChangeDate(schedule: PlanSchedule, today: string): string {
  if (schedule.billingPeriod === 'one_time') throw AppError.validation('a one-time plan has no period to end: give the effective date', 'body.effectiveDate');
  return addDays(periodOf(schedule, today > schedule.startDate ? today : schedule.startDate).to, 1);
}

/** Whether `day` is the first day of one of the schedule's periods (a one-time plan has none but its day). */
export function startsPeriod(schedule: PlanSchedule, day: string): boolean {
  if (schedule.billingPeriod === 'one_time') return day === schedule.startDate;
  return periodOf(schedule, day).from === day;
}

export interface ChangeBounds {
  /** The contract plan changed: its first day, and its last (null: open-ended). */
  startDate: string;
  endDate: string | null;
  /** The contract's last day, if it has one. */
  contractEndDate: string | null;
  /** The last day already invoiced in arrears on the plan (usage, fees billed after the fact), if any. */
  arrearsBilledThrough: string | null;
}

/**
 * A change takes effect on a day the plan still serves, after its first: the old plan keeps at least one
 * day, the new one at least one, and the new one starts before the contract ends. Days already invoiced in
 * arrears were rated on the old plan's prices, so the change cannot reach back over them.
 */
export function assertChangeDate(bounds: ChangeBounds, effectiveDate: string): void {
  const field = 'body.effectiveDate';
  if (effectiveDate <= bounds.startDate) throw AppError.validation(`must be after the contract plan's start ${bounds.startDate}`, field);
  if (bounds.endDate !== null && effectiveDate > bounds.endDate) throw AppError.validation(`the contract plan ends on ${bounds.endDate}: a change takes effect by then`, field);
  if (bounds.contractEndDate !== null && effectiveDate > bounds.contractEndDate) throw AppError.validation(`must not be after the contract's end ${bounds.contractEndDate}`, field);
  if (bounds.arrearsBilledThrough !== null && effectiveDate <= bounds.arrearsBilledThrough) {
    throw AppError.conflict(`the plan's usage is invoiced through ${bounds.arrearsBilledThrough}: a change can take effect from ${addDays(bounds.arrearsBilledThrough, 1)}`);
  }
}
