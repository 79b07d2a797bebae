import { currencyMinorUnits } from './currencies';
import { utcMidnight } from './iso-dates';
import { Decimal, roundToMinor, toDecimal } from './money';

export interface RevenueSlice {
  /** First day of the month, YYYY-MM-01. */
  month: string;
  days: number;
  amount: string;
}

const DAY_MS = 86_400_000;

function utcDay(date: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return utcMidnight(y, m - 1, d).getTime() / DAY_MS;
}

function isoDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/**
 * Straight-line recognition by day over a service period (both ends included), one slice per calendar
 * month. Slices are rounded to the minor unit by largest remainder, so they always add up to the amount.
 */
export function recogniseStraightLine(amount: string | number, currency: string, fromDate: string, toDate: string): RevenueSlice[] {
  const total = roundToMinor(amount, currency);
  const first = utcDay(fromDate);
  const last = Math.max(utcDay(toDate), first);
  const months: Array<{ month: string; days: number }> = [];
  for (let day = first; day <= last; ) {
    const date = new Date(day * DAY_MS);
    const nextMonth = utcMidnight(date.getUTCFullYear(), date.getUTCMonth() + 1, 1).getTime() / DAY_MS;
    const end = Math.min(nextMonth - 1, last);
    months.push({ month: isoDay(utcMidnight(date.getUTCFullYear(), date.getUTCMonth(), 1).getTime() / DAY_MS), days: end - day + 1 });
    day = end + 1;
  }
  const totalDays = last - first + 1;
  const unit = new Decimal(10).pow(-currencyMinorUnits(currency));
  const exact = months.map((m) => total.times(m.days).dividedBy(totalDays));
  const floored = exact.map((value) => value.dividedBy(unit).floor().times(unit));
  let remainder = total.minus(floored.reduce((sum, value) => sum.plus(value), new Decimal(0))).dividedBy(unit).round().toNumber();
  // Hand the leftover minor units to the slices that lost the most to rounding (earliest first on ties).
  const order = exact.map((value, i) => ({ i, lost: value.minus(floored[i]!) })).sort((a, b) => b.lost.comparedTo(a.lost) || a.i - b.i);
  const sign = remainder < 0 ? -1 : 1;
  for (let k = 0; remainder !== 0; k = (k + 1) % order.length) {
    floored[order[k]!.i] = floored[order[k]!.i]!.plus(unit.times(sign));
    remainder -= sign;
  }
  return months.map((m, i) => ({ month: m.month, days: m.days, amount: toDecimal(floored[i]!).toFixed(currencyMinorUnits(currency)) }));
}
