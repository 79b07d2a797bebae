import { sqlInstant } from '../../src/db/dates';

describe('an instant written for Postgres', () => {
  it('is the ISO text for the years 1 to 9999', () => {
    expect(sqlInstant(new Date('9999-12-31T23:45:00Z'))).toBe('9999-12-31T23:45:00.000Z');
    expect(sqlInstant(new Date('0001-01-01T00:00:00Z'))).toBe('0001-01-01T00:00:00.000Z');
  });

  it('writes a year past 9999 plainly, without the sign and padding Postgres reads as a zone offset', () => {
    const end = new Date('9999-12-31T23:45:00Z').getTime() + 15 * 60_000;
    expect(new Date(end).toISOString()).toBe('+010000-01-01T00:00:00.000Z');
    expect(sqlInstant(new Date(end))).toBe('10000-01-01T00:00:00.000Z');
  });
});
