/**
 * The calendar of the moment a test runs, in UTC. A test whose outcome depends on today (the billing period
 * that is open now, an invoice that is overdue or not) takes its dates from here rather than writing them
 * down, so that it holds whatever day the suite runs on.
 */
export const DAY_MS = 24 * 60 * 60 * 1000;

/** An instant's UTC day, `YYYY-MM-DD`. */
export const dayOf = (instant: Date | number): string => new Date(instant).toISOString().slice(0, 10);

/** The milliseconds from `now` to the next UTC midnight. */
export const untilUtcMidnight = (now: number = Date.now()): number => DAY_MS - (((now % DAY_MS) + DAY_MS) % DAY_MS);

/**
 * Waits, blocking, until the next UTC midnight has passed when it is less than `marginMs` away, and answers
 * the milliseconds waited. A test file that takes its dates from today (the open month, an invoice due in
 * ten days) and compares them with what the server says later holds only if today does not end while it
 * runs; calling this before the file is loaded (its module may take the month at load) keeps the day
 * whole for `marginMs`. Blocking is what the caller wants: nothing else of the file may run meanwhile.
 */
export function awayFromUtcMidnight(marginMs: number, now: number = Date.now()): number {
  const left = untilUtcMidnight(now);
  if (left >= marginMs) return 0;
  const wait = left + 1_000;
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
  return wait;
}

/** Today in UTC, `YYYY-MM-DD`. */
export const utcToday = (): string => dayOf(Date.now());

/** The UTC day `days` after today (before it when negative). */
export const utcDaysFromToday = (days: number): string => dayOf(Date.parse(`${utcToday()}T00:00:00Z`) + days * DAY_MS);

export interface UtcMonth {
  /** The month's first instant. */
  start: Date;
  /** The next month's first instant. */
  next: Date;
  /** The month's first and last days, and the next month's first, `YYYY-MM-DD`. */
  firstDay: string;
  lastDay: string;
  nextFirstDay: string;
}

/** The UTC calendar month holding `instant` (now by default). */
export function utcMonthOf(instant: Date | number = Date.now()): UtcMonth {
  const at = new Date(instant);
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const next = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { start, next, firstDay: dayOf(start), lastDay: dayOf(next.getTime() - DAY_MS), nextFirstDay: dayOf(next) };
}

/**
 * `count` instants of the current UTC month from its start up to now, spread evenly and earliest first (ISO
 * 8601): usage of the period that is open now, whatever day of the month it is.
 */
export function earlierThisMonth(count: number): string[] {
  const now = Date.now();
  const { start } = utcMonthOf(now);
  const span = now - start.getTime();
  return Array.from({ length: count }, (_, index) => new Date(start.getTime() + Math.floor((span * index) / count)).toISOString());
}
