import fc from 'fast-check';
import { dayIn, startOfDayIn } from '../../src/domain/zoned-days';

/**
 * The oracle: the instant formatted in the zone by Intl itself, every time (zoned-days keeps each zone's
 * offset per UTC hour instead).
 */
function oracleDay(timeZone: string, at: Date): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at).map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}`;
}

// Half-hour and quarter-hour offsets, half-hour daylight saving (Lord Howe), clock changes at midnight
// (Santiago, Havana), a skipped day (Apia, 2011-12-30), and offsets in seconds before standard time.
const ZONES = ['UTC', 'Europe/Berlin', 'Europe/Rome', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham', 'America/Santiago', 'America/Havana', 'Pacific/Apia', 'Africa/Monrovia', 'Europe/Amsterdam'];
const zone = fc.constantFrom(...ZONES);
const instant = fc.integer({ min: Date.UTC(1880, 0, 1), max: Date.UTC(2100, 0, 1) }).map((ms) => new Date(ms));

describe('calendar days in a zone, with offsets kept per hour', () => {
  it('when an instant is read in a zone, then its day is the one Intl formats, whatever was asked before', () => {
    fc.assert(
      fc.property(zone, fc.array(instant, { minLength: 1, maxLength: 20 }), (timeZone, instants) => {
        // Neighbours of each instant too: the same hour read again, and the seconds around it.
        for (const at of instants.flatMap((at) => [at, new Date(at.getTime() + 1000), new Date(at.getTime() - 1), new Date(at.getTime() + 59 * 60_000)])) {
          expect(dayIn(timeZone, at)).toBe(oracleDay(timeZone, at));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('when a clock change falls inside a UTC hour and crosses midnight, then the instants after it keep their own day', () => {
    // St John's fell back at 00:01 NDT (02:31 UTC) to 23:01 NST of the day before, until 2010: the hour's
    // first second's offset would put 02:45 UTC on 7 November, which it is not.
    const zone = 'America/St_Johns';
    for (const at of ['2010-11-07T02:00:00Z', '2010-11-07T02:30:59Z', '2010-11-07T02:31:00Z', '2010-11-07T02:45:00Z', '2010-11-07T02:59:59Z']) expect(dayIn(zone, new Date(at))).toBe(oracleDay(zone, new Date(at)));
    expect(dayIn(zone, new Date('2010-11-07T02:45:00Z'))).toBe('2010-11-06');
  });

  it('when a clock change skips or repeats midnight, then the day begins at its first second', () => {
    // Santiago springs forward from 00:00 (-04:00) to 01:00 (-03:00); Monrovia went from -0:44:30 to UTC at
    // its midnight; Havana springs forward at midnight too.
    expect(startOfDayIn('2026-09-06', 'America/Santiago').toISOString()).toBe('2026-09-06T04:00:00.000Z');
    expect(startOfDayIn('1972-01-07', 'Africa/Monrovia').toISOString()).toBe('1972-01-07T00:44:30.000Z');
    expect(startOfDayIn('2026-03-08', 'America/Havana').toISOString()).toBe('2026-03-08T05:00:00.000Z');
    // Falling back from 01:00 to 00:00, midnight comes twice: the day begins at the first.
    expect(startOfDayIn('1978-10-01', 'Europe/Rome').toISOString()).toBe('1978-09-30T22:00:00.000Z');
    // Falling back at midnight, the day begins once the repeated hour of the day before is over.
    expect(startOfDayIn('2026-04-05', 'America/Santiago').toISOString()).toBe('2026-04-05T04:00:00.000Z');
  });

  it('when a day\'s start is asked again, then the kept answer is the same instant, in a Date of its own', () => {
    const first = startOfDayIn('2026-09-06', 'America/Santiago');
    first.setTime(0);
    const again = startOfDayIn('2026-09-06', 'America/Santiago');
    expect(again.toISOString()).toBe('2026-09-06T04:00:00.000Z');
    expect(again).not.toBe(startOfDayIn('2026-09-06', 'America/Santiago'));
  });

  it('when a day begins in a zone, then its first instant is in that day and the second before it is not', () => {
    fc.assert(
      fc.property(zone, instant, (timeZone, at) => {
        const day = oracleDay(timeZone, at);
        const start = startOfDayIn(day, timeZone);
        expect(oracleDay(timeZone, start)).toBe(day);
        expect(oracleDay(timeZone, new Date(start.getTime() - 1000))).not.toBe(day);
      }),
      { numRuns: 300 },
    );
  });

  it('when a day of the first or last years is asked, then its start is found in every zone, the year before the year 1 read as such', () => {
    for (const timeZone of [...ZONES, 'Asia/Tokyo', 'Pacific/Kiritimati', 'Pacific/Auckland']) {
      for (const day of ['0001-01-01', '0001-01-02', '0001-03-01', '9999-12-31']) {
        const start = startOfDayIn(day, timeZone);
        expect([timeZone, dayIn(timeZone, start)]).toEqual([timeZone, day]);
        expect([timeZone, dayIn(timeZone, new Date(start.getTime() - 1000)) < day]).toEqual([timeZone, true]);
      }
    }
    // The last second before the year 1 began, UTC: Intl formats it "12/31/1 BC".
    expect(dayIn('UTC', new Date(Date.parse('0001-01-01T00:00:00Z') - 1000))).toBe('0000-12-31');
    expect(dayIn('Asia/Tokyo', new Date(Date.parse('0001-01-01T00:00:00Z') - 10 * 3_600_000))).toBe('0000-12-31');
  });
});
