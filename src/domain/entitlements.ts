/**
 * Entitlements: what a customer may use of a feature, and how much is left.
 *
 * - A metered entitlement's usage period repeats from its anchor's calendar day in the organisation's
 *   time zone: every day, every 7 days, every month on the anchor's day of the month (the month's last day
 *   where it has fewer), or every year on the anchor's date. A period runs from the start of its first day
 *   to the start of the next period's, so its ends fall on local midnights.
 * - Usage in a period uses up the period's limit first; the limit comes back each period. What goes beyond
 *   it is drawn from grants, in order of priority (lower first), then expiry (sooner first, none last),
 *   then grant date: a grant serves a period it was live in (effective before the period ends, not
 *   expired before it starts), and what it gave never comes back. What no grant covers is overage.
 * - The balance is what is left of the limit now plus what is left of the grants live now; access holds
 *   while the balance is above zero, or always under a soft limit.
 */
import { addDays } from './billing-periods';
import { Decimal, formatExact } from './money';
import { dayIn, startOfDayIn } from './zoned-days';
import { utcMidnight } from './iso-dates';

export type UsagePeriod = 'day' | 'week' | 'month' | 'year';

/** One usage period: its first day and the instants it starts and ends (exclusive). */
export interface PeriodSpan {
  /** How many periods after the anchor's (negative: before). */
  index: number;
  start: Date;
  end: Date;
}

/** The first day `YYYY-MM-DD` of period `index` after the one starting on `anchorDay`. */
export function periodStartDay(anchorDay: string, period: UsagePeriod, index: number): string {
  switch (period) {
    case 'day':
      return addDays(anchorDay, index);
    case 'week':
      return addDays(anchorDay, 7 * index);
    case 'month':
      return addMonthsClamped(anchorDay, index);
    case 'year':
      return addMonthsClamped(anchorDay, 12 * index);
  }
}

/** The anchor's day of the month, `months` later, or that month's last day where it has fewer days. */
function addMonthsClamped(day: string, months: number): string {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  const total = year * 12 + (month - 1) + months;
  const targetYear = Math.floor(total / 12);
  const targetMonth = total - targetYear * 12;
  const lastDate = utcMidnight(targetYear, targetMonth + 1, 0).getUTCDate();
  return isoDay(utcMidnight(targetYear, targetMonth, Math.min(date, lastDate)));
}

/** `YYYY-MM-DD` of a UTC date in the years 1 to 9999. */
const isoDay = (date: Date): string => `${String(date.getUTCFullYear()).padStart(4, '0')}-${String(date.getUTCMonth() + 1).padStart(2, '0')}-${String(date.getUTCDate()).padStart(2, '0')}`;

const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00Z`) / 86_400_000;

/** The period of the entitlement anchored at `anchor` that holds the instant `at`, in the zone. */
export function periodAt(anchor: Date, period: UsagePeriod, timeZone: string, at: Date): PeriodSpan {
  const anchorDay = dayIn(timeZone, anchor);
  const day = dayIn(timeZone, at);
  const days = dayNumber(day) - dayNumber(anchorDay);
  let index: number;
  switch (period) {
    case 'day':
      index = days;
      break;
    case 'week':
      index = Math.floor(days / 7);
      break;
    case 'month':
    case 'year': {
      const step = period === 'month' ? 1 : 12;
      const [ay, am] = anchorDay.split('-').map(Number) as [number, number];
      const [y, m] = day.split('-').map(Number) as [number, number];
      index = Math.floor((y * 12 + m - (ay * 12 + am)) / step);
      // The anchor's day may not have come yet in this month (or year).
      if (periodStartDay(anchorDay, period, index) > day) index -= 1;
      break;
    }
  }
  return spanOf(anchorDay, period, timeZone, index);
}

/** Period `index` as instants of the zone. */
export function spanOf(anchorDay: string, period: UsagePeriod, timeZone: string, index: number): PeriodSpan {
  return {
    index,
    start: startOfDayIn(periodStartDay(anchorDay, period, index), timeZone),
    end: startOfDayIn(periodStartDay(anchorDay, period, index + 1), timeZone),
  };
}

/** A grant: an amount of the feature given beyond the limit, live from `effectiveAt` until `expiresAt`. */
export interface Grant {
  id: string;
  amount: string;
  effectiveAt: Date;
  expiresAt: Date | null;
  priority: number;
}

/** The usage of one period. */
export interface PeriodUsage {
  start: Date;
  end: Date;
  usage: string;
}

export interface MeteredTerms {
  /** What each period allows before grants (null: nothing, grants only). */
  limit: string | null;
  isSoftLimit: boolean;
  grants: readonly Grant[];
}

/** Where a metered entitlement stands at an instant. */
export interface MeteredValue {
  hasAccess: boolean;
  usage: string;
  balance: string;
  overage: string;
  /** What is left of each grant, by id (expired ones included, at what they had left). */
  grantsLeft: Record<string, string>;
}

/** The order grants are drawn in: priority, then the sooner expiry (none last), then the earlier grant. */
export function drawOrder(a: Grant, b: Grant): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const ae = a.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
  const be = b.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
  if (ae !== be) return ae < be ? -1 : 1;
  if (a.effectiveAt.getTime() !== b.effectiveAt.getTime()) return a.effectiveAt.getTime() - b.effectiveAt.getTime();
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Whether the grant served the period: effective before it ended and not expired before it started. */
const servesPeriod = (grant: Grant, period: PeriodUsage): boolean => grant.effectiveAt < period.end && (grant.expiresAt === null || grant.expiresAt > period.start);
/** Whether the grant is live at the instant. */
const liveAt = (grant: Grant, at: Date): boolean => grant.effectiveAt <= at && (grant.expiresAt === null || grant.expiresAt > at);

/**
 * The value at `at` of a metered entitlement, from the usage of every period since the first grant took
 * effect, in time order (the last one holding `at`). Grants are burnt down period by period.
 */
export function meteredValue(terms: MeteredTerms, periods: readonly PeriodUsage[], at: Date): MeteredValue {
  // A grant not yet in effect serves nothing.
  const ordered = terms.grants.filter((grant) => grant.effectiveAt <= at).sort(drawOrder);
  const left = new Map(ordered.map((grant) => [grant.id, new Decimal(grant.amount)]));
  const limit = new Decimal(terms.limit ?? 0);
  let current = { usage: new Decimal(0), overage: new Decimal(0) };
  for (const period of periods) {
    const usage = new Decimal(period.usage);
    let beyond = Decimal.max(usage.minus(limit), 0);
    for (const grant of ordered) {
      if (beyond.isZero()) break;
      if (!servesPeriod(grant, period)) continue;
      const take = Decimal.min(beyond, left.get(grant.id)!);
      left.set(grant.id, left.get(grant.id)!.minus(take));
      beyond = beyond.minus(take);
    }
    current = { usage, overage: beyond };
  }
  // Usage below zero (corrections that took back more than was used) leaves the whole limit, never more.
  const limitLeft = Decimal.min(limit, Decimal.max(limit.minus(current.usage), 0));
  const grantsLive = ordered.filter((grant) => liveAt(grant, at)).reduce((sum, grant) => sum.plus(left.get(grant.id)!), new Decimal(0));
  const balance = limitLeft.plus(grantsLive);
  return {
    hasAccess: terms.isSoftLimit || balance.gt(0),
    usage: formatExact(current.usage),
    balance: formatExact(balance),
    overage: formatExact(current.overage),
    grantsLeft: Object.fromEntries([...left].map(([id, amount]) => [id, formatExact(amount)])),
  };
}

/** Most periods grants are burnt down over: those before (more than 2 years of daily periods) are not read. */
export const MAX_BURN_DOWN_PERIODS = 1000;

/**
 * The periods whose usage the value at `at` needs: from the earliest period a grant served (grants are
 * burnt down in time order), but none before the anchor's and at most `MAX_BURN_DOWN_PERIODS`, to the one
 * holding `at`; only the current one without grants.
 */
export function periodsToRead(anchor: Date, period: UsagePeriod, timeZone: string, grants: readonly Grant[], at: Date): PeriodSpan[] {
  const current = periodAt(anchor, period, timeZone, at);
  const effective = grants.filter((grant) => grant.effectiveAt <= at).map((grant) => grant.effectiveAt.getTime());
  if (effective.length === 0) return [current];
  const first = Math.max(periodAt(anchor, period, timeZone, new Date(Math.min(...effective))).index, 0, current.index - MAX_BURN_DOWN_PERIODS + 1);
  const anchorDay = dayIn(timeZone, anchor);
  const spans: PeriodSpan[] = [];
  for (let index = Math.min(first, current.index); index <= current.index; index += 1) spans.push(spanOf(anchorDay, period, timeZone, index));
  return spans;
}
