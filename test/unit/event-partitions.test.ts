import fc from 'fast-check';
import { addMonths, monthKey, monthOf, partitionName } from '../../src/modules/usage/event-partitions';

describe('usage event partitions by UTC month', () => {
  it('when an instant is given, then its month starts at midnight UTC on the first, whatever the instant', () => {
    expect(monthOf(new Date('2026-12-31T23:59:59.999Z')).toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(monthOf(new Date('2027-01-01T00:00:00.000Z')).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    // 00:30 on 1 March in Berlin is still February in UTC.
    expect(monthOf(new Date('2026-03-01T00:30:00+01:00')).toISOString()).toBe('2026-02-01T00:00:00.000Z');
  });

  it('when months are added or taken away, then the year turns over both ways', () => {
    const november = new Date('2026-11-01T00:00:00Z');
    expect(addMonths(november, 2).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(addMonths(november, -11).toISOString()).toBe('2025-12-01T00:00:00.000Z');
    expect(addMonths(november, 0).toISOString()).toBe(november.toISOString());
  });

  it('when a month is named, then its key and its partition name follow the UTC year and month', () => {
    const month = new Date('2027-04-01T00:00:00Z');
    expect(monthKey(month)).toBe('2027-04');
    expect(partitionName(month)).toBe('usage_events_2027_04');
  });

  it('when an instant lies in the years 1 to 99, then its month is of that year, not of the 1900s', () => {
    const january = monthOf(new Date('0001-01-15T10:00:00Z'));
    expect(january.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(addMonths(january, 1).toISOString()).toBe('0001-02-01T00:00:00.000Z');
    expect(addMonths(new Date('0099-12-01T00:00:00Z'), 1).toISOString()).toBe('0100-01-01T00:00:00.000Z');
    expect(addMonths(new Date('0100-01-01T00:00:00Z'), -1).toISOString()).toBe('0099-12-01T00:00:00.000Z');
  });

  it('when any instant of years 1 to 9999 is taken, then it lies in its month and before the next, and the month is named by it', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), (at) => {
        const month = monthOf(at);
        expect(month.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(addMonths(month, 1).getTime()).toBeGreaterThan(at.getTime());
        expect(monthKey(month)).toBe(at.toISOString().slice(0, 7));
        expect(partitionName(month)).toMatch(/^usage_events_\d{4}_(0[1-9]|1[0-2])$/);
      }),
    );
  });
});
