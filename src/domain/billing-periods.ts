/**
 * Billing periods and proration for automatic invoice runs (docs/billing-runs.md, "Billing semantics").
 * Every date is a UTC calendar day `YYYY-MM-DD`, and every range includes both of its ends.
 */
import { currencyMinorUnits } from './currencies';
import { AppError } from './errors';
import { Decimal, toDecimal } from './money';
import { priceItem, type PricedPlanItem } from './pricing';
import { utcMidnight } from './iso-dates';

export type BillingPeriodKind = 'monthly' | 'quarterly' | 'yearly' | 'one_time';
/** `calendar`: calendar months, quarters (Jan/Apr/Jul/Oct) and years; `anniversary`: from the start date. */
export type BillingAnchor = 'calendar' | 'anniversary';
export type BillingTiming = 'in_advance' | 'in_arrears';

/** Consecutive days, both ends included. */
export interface DayRange {
  from: string;
  to: string;
}

/** Days on which a contract bills no fees; `to: null` is a suspension that has not ended. */
export interface Suspension {
  from: string;
  to: string | null;
}

/** A plan item as the billing run sees it: priced like any plan item, plus its meter and timing. */
export interface BillableItem extends PricedPlanItem {
  id: string;
  meterId?: string | null;
  /** Absent: `in_arrears` for an item with a meter, `in_advance` otherwise. */
  billingTiming?: BillingTiming | null;
}

export interface Proration {
  /** The prorated amount, with exactly the currency's decimals. */
  amount: string;
  /** Days billed (used and not suspended) out of `periodDays`: the fraction applied. */
  days: number;
  periodDays: number;
}

// ---- calendar days as day numbers (days since 1970-01-01), so that ranges are plain integer intervals

const DAY_MS = 86_400_000;
const ISO_DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A range of day numbers, both ends included. */
export interface Days {
  from: number;
  to: number;
}

function dayOf(year: number, month0: number, day: number): number {
  return utcMidnight(year, month0, day).getTime() / DAY_MS;
}

/** Day numbers already written out: an invoice run converts the same few days for every contract. */
const isoDays = new Map<number, string>();

/** The calendar day of a day number. */
export function isoOf(day: number): string {
  let iso = isoDays.get(day);
  if (iso === undefined) {
    iso = new Date(day * DAY_MS).toISOString().slice(0, 10);
    if (isoDays.size < 100_000) isoDays.set(day, iso);
  }
  return iso;
}

/** The day number of a calendar day `YYYY-MM-DD`; anything else is a validation error naming `field`. */
export function parseDay(value: string, field: string): number {
  const match = ISO_DAY.exec(value);
  const day = match ? dayOf(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : NaN;
  if (Number.isNaN(day) || isoOf(day) !== value) throw AppError.validation(`${field} must be a calendar day YYYY-MM-DD, not ${value}`);
  return day;
}

function parseRange(range: DayRange, field: string): Days {
  const days = { from: parseDay(range.from, `${field}.from`), to: parseDay(range.to, `${field}.to`) };
  if (days.to < days.from) throw AppError.validation(`${field} ends before it starts`);
  return days;
}

function toRange(days: Days): DayRange {
  return { from: isoOf(days.from), to: isoOf(days.to) };
}

/** Months counted from year 0: `year * 12 + month0`, so that adding months is adding integers. */
function monthIndexOf(day: number): number {
  const date = new Date(day * DAY_MS);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
}

function firstDayOfMonth(monthIndex: number): number {
  return dayOf(Math.floor(monthIndex / 12), monthIndex % 12, 1);
}

/** The earlier of two last days, null being open-ended. */
export const earlierEnd = (a: string | null, b: string | null): string | null => (a === null ? b : b === null || a < b ? a : b);

/** The calendar day `n` days after `day` (before it, for a negative `n`), within the years 1 to 9999. */
export function addDays(day: string, n: number): string {
  const iso = isoOf(parseDay(day, 'day') + n);
  if (!ISO_DAY.test(iso) || iso < '0001-01-01') throw AppError.validation(`${n} days from ${day} falls outside the years 1 to 9999`);
  return iso;
}

// ---- periods

const MONTHS: Record<Exclude<BillingPeriodKind, 'one_time'>, number> = { monthly: 1, quarterly: 3, yearly: 12 };

function calendarPeriod(months: number, day: number): Days {
  const start = Math.floor(monthIndexOf(day) / months) * months;
  return { from: firstDayOfMonth(start), to: firstDayOfMonth(start + months) - 1 };
}

/**
 * The k-th anniversary period. Its start is always derived from the anchor's own day, clamped to the
 * month's length, so that a short month never shifts the starts after it (31 Jan, 28 Feb, 31 Mar).
 */
function anniversaryStart(anchor: number, months: number, k: number): number {
  const anchorDay = new Date(anchor * DAY_MS).getUTCDate();
  const month = monthIndexOf(anchor) + k * months;
  const monthLength = firstDayOfMonth(month + 1) - firstDayOfMonth(month);
  return firstDayOfMonth(month) + Math.min(anchorDay, monthLength) - 1;
}

function anniversaryPeriod(anchor: number, months: number, day: number): Days {
  let k = Math.floor((monthIndexOf(day) - monthIndexOf(anchor)) / months);
  // Only in the anchor's month of the cycle can the (clamped) start still lie ahead of the day.
  if (anniversaryStart(anchor, months, k) > day) k -= 1;
  return { from: anniversaryStart(anchor, months, k), to: anniversaryStart(anchor, months, k + 1) - 1 };
}

/** The whole periods of the kind that share a day with `span`, in order (see `periodsOf`). */
export function periodsBetween(kind: BillingPeriodKind, anchor: BillingAnchor, anchorDay: number, span: Days): Days[] {
  if (kind === 'one_time') return anchorDay >= span.from && anchorDay <= span.to ? [{ from: anchorDay, to: anchorDay }] : [];
  const months = MONTHS[kind];
  const containing = (day: number) => (anchor === 'calendar' ? calendarPeriod(months, day) : anniversaryPeriod(anchorDay, months, day));
  const periods: Days[] = [];
  for (let period = containing(span.from); period.from <= span.to; period = containing(period.to + 1)) periods.push(period);
  return periods;
}

/**
 * The whole periods that share at least one day with `span`, in order: contiguous, each day of the span
 * in exactly one. `anchorDate` is the contract plan's start date: anniversary periods repeat from it, and
 * it is the only day of a `one_time` plan; calendar periods do not depend on it.
 */
export function periodsOf(kind: BillingPeriodKind, anchor: BillingAnchor, anchorDate: string, span: DayRange): DayRange[] {
  return periodsBetween(kind, anchor, parseDay(anchorDate, 'anchorDate'), parseRange(span, 'span')).map(toRange);
}

// ---- proration

/** `amount × k / n` in minor units, rounded half-up (away from zero), in exact integer arithmetic. */
export function shareInMinorUnits(amount: Decimal, k: number, n: number, minorUnits: number): bigint {
  const places = amount.decimalPlaces();
  const numerator = BigInt(amount.times(new Decimal(10).pow(places)).toFixed(0)) * BigInt(k) * 10n ** BigInt(minorUnits);
  const denominator = BigInt(n) * 10n ** BigInt(places);
  const quotient = numerator / denominator;
  const remainder = numerator % denominator;
  if (2n * (remainder < 0n ? -remainder : remainder) < denominator) return quotient;
  return numerator < 0n ? quotient - 1n : quotient + 1n;
}

const OPEN_END = Number.POSITIVE_INFINITY;

export function parseSuspensions(suspensions: readonly Suspension[]): Days[] {
  return suspensions
    .map((suspension, i) => {
      const from = parseDay(suspension.from, `suspensions[${i}].from`);
      const to = suspension.to === null ? OPEN_END : parseDay(suspension.to, `suspensions[${i}].to`);
      if (to < from) throw AppError.validation(`suspensions[${i}] ends before it starts`);
      return { from, to };
    })
    .sort((a, b) => a.from - b.from);
}

/** The runs of `range` that no suspension covers (suspensions sorted by start; they may overlap). */
export function unsuspendedRuns(range: Days, suspensions: readonly Days[]): Days[] {
  const runs: Days[] = [];
  let cursor = range.from;
  for (const suspension of suspensions) {
    if (suspension.from > range.to) break;
    if (suspension.from > cursor) runs.push({ from: cursor, to: suspension.from - 1 });
    cursor = Math.max(cursor, suspension.to + 1);
  }
  if (cursor <= range.to) runs.push({ from: cursor, to: range.to });
  return runs;
}

function prorateDays(amount: Decimal, currency: string, period: Days, used: Days, suspensions: readonly Days[]): Proration {
  const minorUnits = currencyMinorUnits(currency);
  const periodDays = period.to - period.from + 1;
  // The amount from the period's first day through `day`, rounded. A part is the difference of two of
  // these, so the parts of one period telescope: together they never exceed the rounded whole.
  const throughDay = (day: number) => shareInMinorUnits(amount, day - period.from + 1, periodDays, minorUnits);
  const clipped = { from: Math.max(used.from, period.from), to: Math.min(used.to, period.to) };
  let minor = 0n;
  let days = 0;
  if (clipped.from <= clipped.to) {
    for (const run of unsuspendedRuns(clipped, suspensions)) {
      minor += throughDay(run.to) - throughDay(run.from - 1);
      days += run.to - run.from + 1;
    }
  }
  const value = new Decimal(minor.toString()).times(new Decimal(10).pow(-minorUnits));
  return { amount: value.toFixed(minorUnits), days, periodDays };
}

/**
 * The part of `amount` (the fee of the whole `period`) earned over the days of `used` that fall in the
 * period and in no suspension: the difference of `amount × days since the period's start / days in the
 * period`, rounded half-up to the currency's minor unit, at the part's two ends. A part starting on the
 * period's first day is exactly `amount × days / periodDays` rounded; any other part is within one minor
 * unit of it, and the parts of one period never add up to more than the (rounded) amount.
 */
export function prorate(amount: number | string | Decimal, currency: string, period: DayRange, used: DayRange, suspensions: readonly Suspension[] = []): Proration {
  return prorateDays(toDecimal(amount), currency, parseRange(period, 'period'), parseRange(used, 'used'), parseSuspensions(suspensions));
}

// ---- fees

/** The item's timing: its own, or `in_arrears` for an item with a meter and `in_advance` for any other. */
export function billingTimingOf(item: Pick<BillableItem, 'meterId' | 'billingTiming'>): BillingTiming {
  return item.billingTiming ?? (item.meterId ? 'in_arrears' : 'in_advance');
}

/** Fees already priced, per item and currency: an invoice run prices the same plan items for many contracts. */
const fees = new WeakMap<BillableItem, Map<string, Decimal>>();

/** The fee of one whole period: the item priced for its own quantity (default 1), as milestones are. */
export function fullFee(item: BillableItem, currency: string): Decimal {
  let byCurrency = fees.get(item);
  if (!byCurrency) fees.set(item, (byCurrency = new Map()));
  let fee = byCurrency.get(currency);
  if (fee === undefined) byCurrency.set(currency, (fee = toDecimal(priceItem(item, item.quantity ?? 1, currency).amount)));
  return fee;
}
