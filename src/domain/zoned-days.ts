/**
 * Calendar days in a time zone: the organisation's (or a customer's) day is what billing periods, usage
 * windows and "today" are read in, so that a period and its usage cover the same instants.
 */
const formats = new Map<string, Intl.DateTimeFormat>();

function formatIn(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formats.set(timeZone, format);
  }
  return format;
}

/** The wall-clock time in the zone at `instant`, read as if it were UTC, in milliseconds. */
function wallClock(instant: number, timeZone: string): number {
  const parts = Object.fromEntries(formatIn(timeZone).formatToParts(new Date(instant)).map((part) => [part.type, part.value]));
  const date = new Date(0);
  date.setUTCFullYear(Number(parts.year), Number(parts.month) - 1, Number(parts.day));
  date.setUTCHours(Number(parts.hour), Number(parts.minute), Number(parts.second), 0);
  return date.getTime();
}

/** The calendar day `YYYY-MM-DD` in the zone at `instant`. */
export function dayIn(timeZone: string, instant: Date = new Date()): string {
  return new Date(wallClock(instant.getTime(), timeZone)).toISOString().slice(0, 10);
}

/**
 * The instant the calendar day begins in the zone (its first instant, where a clock change skips
 * midnight). Two passes settle the offset on either side of a change.
 */
export function startOfDayIn(day: string, timeZone: string): Date {
  const midnight = Date.parse(`${day}T00:00:00Z`);
  let instant = midnight - (wallClock(midnight, timeZone) - midnight);
  instant = midnight - (wallClock(instant, timeZone) - instant);
  return new Date(instant);
}
