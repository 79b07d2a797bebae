/**
 * Calendar days in a time zone: the organisation's (or a customer's) day is what billing periods, usage
 * windows and "today" are read in, so that a period and its usage cover the same instants.
 */
import { InvariantError } from './errors';

/**
 * Zone names that PostgreSQL reads as abbreviations of one offset before it looks for a zone of that name:
 * `AT TIME ZONE 'CET'` is UTC+01:00 all year there, where the time-zone database (and the runtime) gives CET
 * summer time. Since tzdata 2024b they are links to these zones, which every reader agrees on. (EST, MST,
 * HST, GMT, UCT, UTC and Zulu are abbreviations too, but of zones with one offset all year: both readings
 * agree.)
 */
const ZONES_READ_AS_ABBREVIATIONS: Readonly<Record<string, string>> = { CET: 'Europe/Brussels', EET: 'Europe/Athens', MET: 'Europe/Brussels', WET: 'Europe/Lisbon' };

/** The zone a name stands for, under a name PostgreSQL and the runtime read alike (`CET` → `Europe/Brussels`). */
export function zoneAsRead(zone: string): string {
  return ZONES_READ_AS_ABBREVIATIONS[zone] ?? zone;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function formatIn(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    // The era too: the year before the year 1 is formatted as "1" BC, which read alone is the year 1 again.
    format = new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', era: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    formats.set(timeZone, format);
  }
  return format;
}

/** The wall-clock time in the zone at `instant` to the second, read as if it were UTC, in milliseconds. */
function wallClockOf(instant: number, timeZone: string): number {
  const parts = Object.fromEntries(formatIn(timeZone).formatToParts(new Date(instant)).map((part) => [part.type, part.value]));
  const date = new Date(0);
  const year = parts.era === 'BC' ? 1 - Number(parts.year) : Number(parts.year);
  date.setUTCFullYear(year, Number(parts.month) - 1, Number(parts.day));
  date.setUTCHours(Number(parts.hour), Number(parts.minute), Number(parts.second), 0);
  return date.getTime();
}

const HOUR_MS = 3_600_000;
const OFFSETS_KEPT = 50_000;
/** A zone's offset from UTC through a whole UTC hour, by zone and hour, where it holds the hour through. */
const offsets = new Map<string, number>();

/**
 * `wallClockOf`, with the zone's offset kept per UTC hour: formatting an instant in a zone is slow (a few
 * microseconds), and billing asks the same zone about the same hours over and over. The offset is read at
 * the hour's first and last second; when they agree it holds for the whole hour (no zone changes its clock
 * twice in one hour) and is kept, otherwise the instant is formatted itself. Offsets are whole seconds.
 */
function wallClock(instant: number, timeZone: string): number {
  const hour = Math.floor(instant / HOUR_MS);
  const key = `${timeZone} ${hour}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const first = hour * HOUR_MS;
    const last = first + HOUR_MS - 1000;
    offset = wallClockOf(first, timeZone) - first;
    if (wallClockOf(last, timeZone) - last !== offset) return wallClockOf(instant, timeZone);
    if (offsets.size >= OFFSETS_KEPT) offsets.clear();
    offsets.set(key, offset);
  }
  return Math.floor(instant / 1000) * 1000 + offset;
}

/** The calendar day `YYYY-MM-DD` in the zone at `instant`. */
export function dayIn(timeZone: string, instant: Date = new Date()): string {
  return new Date(wallClock(instant.getTime(), timeZone)).toISOString().slice(0, 10);
}

/**
 * The instant the calendar day begins in the zone: the first second that reads as the day. That is its
 * midnight, but where a clock change skips midnight (Santiago's spring, Monrovia in 1972) the change itself,
 * and where one repeats midnight's hour (Italy fell back from 01:00 to 00:00 in the 1970s) the first of the
 * two midnights. Two passes settle the offset on either side of a change; a second either side of where
 * they land tells whether a change is near, and then the first second is searched for.
 */
export function startOfDayIn(day: string, timeZone: string): Date {
  const key = `${timeZone} ${day}`;
  let start = starts.get(key);
  if (start === undefined) {
    start = firstSecondOf(day, timeZone);
    if (starts.size >= STARTS_KEPT) starts.clear();
    starts.set(key, start);
  }
  return new Date(start);
}

const STARTS_KEPT = 50_000;
/**
 * Where each day began in each zone, by zone and day: periods, windows and alerts ask for the same few
 * days' starts over and over (every evaluation of a thousand entitlements asks for their periods' edges),
 * and the answer for a day never changes.
 */
const starts = new Map<string, number>();

/** `startOfDayIn`, worked out: the instant in milliseconds. */
function firstSecondOf(day: string, timeZone: string): number {
  const midnight = Date.parse(`${day}T00:00:00Z`);
  let instant = midnight - (wallClock(midnight, timeZone) - midnight);
  instant = midnight - (wallClock(instant, timeZone) - instant);
  const isBefore = (at: number) => dayIn(timeZone, new Date(at)) < day;
  if (!isBefore(instant) && isBefore(instant - 1000)) return instant;
  // An instant before the day, and one in it (or after), hours apart at most: no change moves a clock by a
  // day. Looked for a day and a half either way at most: past that, the zone's clock is not read right, and
  // a step that never ends would hold its worker for ever.
  let before = instant;
  let from = instant;
  const step = isBefore(instant) ? () => (from += HOUR_MS) : () => (before -= HOUR_MS);
  for (let hours = 0; isBefore(from) || !isBefore(before); hours += 1) {
    if (hours > 36) throw new InvariantError(`the start of ${day} in ${timeZone} was not found within 36 hours of its midnight`);
    step();
  }
  while (from - before > 1000) {
    const middle = before + Math.floor((from - before) / 2000) * 1000;
    if (isBefore(middle)) before = middle;
    else from = middle;
  }
  return from;
}
