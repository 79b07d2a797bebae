import { createDb } from '../../src/db/knex';
import { ISO_TEXT, isoText } from '../../src/modules/usage/usage-aggregates';

/**
 * A meter query's window ends leave Postgres as text (`ISO_TEXT`, finished by `isoText`) and must read as
 * `Date#toISOString` writes the same instant: inside the years 1 to 9999 and at both ends of them, where a
 * window can end in the year 10000 or start in the year 0 in a zone west of UTC. Checked on the suite's
 * Postgres against instants computed here, without writing a row.
 */
const db = createDb(process.env.DATABASE_URL!, 1);
afterAll(() => db.destroy());

const yearZero = new Date(Date.UTC(2000, 11, 31, 4, 56, 2));
yearZero.setUTCFullYear(0);
const instants = [
  new Date('2026-03-29T01:00:00.123Z'),
  new Date('9999-12-31T23:45:00.000Z'),
  new Date(Date.UTC(10000, 0, 1)),
  new Date('0001-01-01T00:00:00.000Z'),
  yearZero,
  new Date('1970-01-01T00:00:00.000Z'),
  new Date('1969-12-31T23:59:59.999Z'),
];

it('when window ends lie anywhere from the year 0 to the year 10000, then they read as Date#toISOString writes them', async () => {
  const result = await db.raw<{ rows: Array<{ text: string }> }>(
    `SELECT ${ISO_TEXT('v.instant')} AS text FROM unnest(?::text[]) WITH ORDINALITY AS given(ms, n)
       CROSS JOIN LATERAL (SELECT to_timestamp(given.ms::numeric / 1000) AS instant) AS v ORDER BY given.n`,
    [instants.map((instant) => String(instant.getTime()))],
  );
  expect(result.rows.map((row) => isoText(row.text))).toEqual(instants.map((instant) => instant.toISOString()));
  // Both forms are in play: the years 1 to 9999 as text, the ends as milliseconds.
  expect(result.rows.map((row) => /^-?\d+$/.test(row.text))).toEqual([false, false, true, false, true, false, false]);
});
