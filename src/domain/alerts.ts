import { addDays, periodsOf, type BillingAnchor, type BillingPeriodKind } from './billing-periods';
import { toDecimal } from './money';
import { dayIn, startOfDayIn } from './zoned-days';

/**
 * The pure rules of alerts: which thresholds a value has newly crossed, and the period an instant falls in.
 * Usage and spend grow, so their thresholds are crossed upward (the value reaches them); a credit balance
 * runs down, so its thresholds are crossed downward (the value falls to them or below).
 */

export type AlertMetric = 'usage' | 'spend' | 'credit_balance';
export type CrossingDirection = 'up' | 'down';

/** How many thresholds an alert may have. */
export const MAX_THRESHOLDS = 20;

/** The direction an alert's thresholds are crossed in: down for a balance, up for what accumulates. */
export const directionOf = (metric: AlertMetric): CrossingDirection => (metric === 'credit_balance' ? 'down' : 'up');

/**
 * The thresholds `value` has crossed in `direction` that have not fired yet, in the order given. A threshold
 * is crossed when the value reaches it (up: value ≥ threshold; down: value ≤ threshold), so a value that
 * sits exactly on it fires it once.
 */
export function newlyCrossed(thresholds: readonly string[], value: string, direction: CrossingDirection, fired: readonly string[]): string[] {
  const current = toDecimal(value);
  const done = fired.map((threshold) => toDecimal(threshold));
  return thresholds.filter((threshold) => {
    const limit = toDecimal(threshold);
    const crossed = direction === 'up' ? current.greaterThanOrEqualTo(limit) : current.lessThanOrEqualTo(limit);
    return crossed && !done.some((firedOne) => firedOne.equals(limit));
  });
}

/** One period an alert counts in: from `start` (inclusive) to `end` (exclusive; null: for ever). */
export interface AlertPeriod {
  start: Date;
  end: Date | null;
}

/** A contract plan's billing schedule, as far as the period of an instant needs it. */
export interface BillingSchedule {
  kind: BillingPeriodKind;
  anchor: BillingAnchor;
  /** The contract plan's first and last days (null: open-ended): anniversary periods repeat from the first. */
  startDate: string;
  endDate: string | null;
}

/** The calendar month of the zone that holds `instant`. */
export function calendarMonthAt(instant: Date, timeZone: string): AlertPeriod {
  const day = dayIn(timeZone, instant);
  const first = `${day.slice(0, 8)}01`;
  const next = addDays(first, 32);
  return { start: startOfDayIn(first, timeZone), end: startOfDayIn(`${next.slice(0, 8)}01`, timeZone) };
}

/**
 * The period that holds `instant`: the billing period of the contract plan in force that day (cut to the
 * plan's own days), else, where no recurring plan is in force (no contract, a one-time plan, a day outside
 * every plan), the calendar month of the zone.
 */
export function periodAt(instant: Date, timeZone: string, schedules: readonly BillingSchedule[]): AlertPeriod {
  const day = dayIn(timeZone, instant);
  const plan = schedules.find((schedule) => schedule.kind !== 'one_time' && schedule.startDate <= day && (schedule.endDate === null || day <= schedule.endDate));
  if (!plan) return calendarMonthAt(instant, timeZone);
  const range = periodsOf(plan.kind, plan.anchor, plan.startDate, { from: day, to: day })[0]!;
  const from = range.from < plan.startDate ? plan.startDate : range.from;
  const to = plan.endDate !== null && plan.endDate < range.to ? plan.endDate : range.to;
  return { start: startOfDayIn(from, timeZone), end: startOfDayIn(addDays(to, 1), timeZone) };
}

/** How many periods one evaluation looks at for one alert: usage reaching further back is rare. */
export const MAX_PERIODS_PER_SPAN = 24;

/** The periods that share an instant with [from, to], in order: the latest MAX_PERIODS_PER_SPAN of them. */
export function periodsSpanning(from: Date, to: Date, timeZone: string, schedules: readonly BillingSchedule[]): AlertPeriod[] {
  const periods: AlertPeriod[] = [];
  for (let period = periodAt(to, timeZone, schedules); periods.length < MAX_PERIODS_PER_SPAN; period = periodAt(new Date(period.start.getTime() - 1), timeZone, schedules)) {
    periods.unshift(period);
    if (period.start <= from) break;
  }
  return periods;
}
