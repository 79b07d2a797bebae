import { instantProblem } from './storable';

/**
 * The date syntax the API takes, in one place: the route schemas (and so the OpenAPI document's
 * `pattern`s) and the objects query language check dates by it.
 */

// Years 0001 to 9999, months and days of the Gregorian calendar, leap days included.
const YEAR = '(?:000[1-9]|00[1-9]\\d|0[1-9]\\d\\d|[1-9]\\d{3})';
const LEAP_YEAR = '(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|(?:0[48]|[2468][048]|[13579][26])00)';
const MONTH_DAY = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';
const DATE = `(?:${LEAP_YEAR}-02-29|${YEAR}-${MONTH_DAY})`;
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d{1,9})?';
const ZONE = '(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)';

/** A calendar date, YYYY-MM-DD, in the years 0001 to 9999: `2026-02-30` and `0000-01-01` are none. */
export const ISO_DATE = new RegExp(`^${DATE}$`);

/** An ISO 8601 date-time with a zone (Z or ±hh:mm) whose day exists; its instant is checked apart. */
export const ISO_DATE_TIME = new RegExp(`^${DATE}T${TIME}${ZONE}$`);

/** An ISO 8601 date-time with a zone, falling in the years 1 to 9999 once in UTC. */
export function isIsoInstant(value: string): boolean {
  return ISO_DATE_TIME.test(value) && !instantProblem(new Date(value));
}

/** The last day an ISO date (and a Postgres date this service stores) can name. */
export const LAST_DAY = '9999-12-31';

/** The last instant an ISO date-time of the years 1 to 9999 can name. */
export const LAST_INSTANT = `${LAST_DAY}T23:59:59.999Z`;

/** How far ahead of the server's clock an instant may be and still be taken as now: clients' clocks drift. */
const CLOCK_DRIFT_MS = 60_000;

/** Whether an instant has not come yet, a minute's clock drift aside (a payment that has not arrived). */
export function isAhead(instant: string, now = Date.now()): boolean {
  return Date.parse(instant) > now + CLOCK_DRIFT_MS;
}

/**
 * Midnight UTC of a calendar day, set field by field: `Date.UTC` reads the years 0 to 99 as 1900 to 1999.
 * Months and days past their ends carry over, as with `Date.UTC`.
 */
export function utcMidnight(year: number, monthIndex: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, monthIndex, day);
  return date;
}
