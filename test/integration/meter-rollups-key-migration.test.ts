import type { Knex } from 'knex';
import { databaseBefore } from './support/migration-database';

/**
 * The rollups' primary key rebuilt to carry sum, count and maximum, on a database of its own holding 20,000
 * rollup rows, while a writer keeps adding to them as ingestion does (INSERT … ON CONFLICT on the key). After
 * it: no row lost or doubled, every addition in, no writer's statement waited a second, a customer's rows
 * are read from the key alone, and the step back restores the plain key.
 */
const MIGRATION = '20261205000100_meter_rollups_covering_key.ts';
const SEEDED = 20_000;
const org = 'org_rollup_key';
const meter = 'mtr_rollup_key';
let db: Knex;
let writerDb: Knex;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ db, writer: writerDb, drop } = await databaseBefore(MIGRATION, 'rollupkey'));
});

afterAll(async () => {
  await drop();
});

/** Rows n = 1..20,000 of sum n, over 20 entities and a thousand quarter hours from 2026-08-01. */
async function seed(): Promise<void> {
  await db('organisations').insert({ id: org, name: 'Rollup Key Ltd' });
  await db('meters').insert({ id: meter, organisation_id: org, name: 'Tokens', metric: 'tokens', aggregation: 'sum', group_by: JSON.stringify(['model']), backfill_status: 'completed' });
  await db.raw(
    `INSERT INTO meter_rollups (meter_id, organisation_id, customer_entity_id, bucket_start, group_values, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id)
     SELECT ?, ?, 'ent_' || (n % 20), timestamptz '2026-08-01 00:00:00+00' + (n / 20) * interval '15 minutes', ARRAY['m' || (n % 7)], n, 1, n, n,
            timestamptz '2026-08-01 00:00:00+00' + (n / 20) * interval '15 minutes', now(), 'evt_' || n
     FROM generate_series(1, ?) AS n`,
    [meter, org, SEEDED],
  );
}

/** Adds 1 to a seeded row, or a row of its own, in turns, as a chunk's rollup statement does, until `stop`. */
async function write(stop: () => boolean): Promise<{ added: number; inserted: number; slowestMs: number }> {
  const log = { added: 0, inserted: 0, slowestMs: 0 };
  for (let i = 0; !stop(); i += 1) {
    const n = i % 2 === 0 ? 1 + (i % SEEDED) : SEEDED + i;
    const started = performance.now();
    await writerDb.raw(
      `INSERT INTO meter_rollups (meter_id, organisation_id, customer_entity_id, bucket_start, group_values, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id)
       VALUES (?, ?, 'ent_' || (?::int % 20), timestamptz '2026-08-01 00:00:00+00' + (?::int / 20) * interval '15 minutes', ARRAY['m' || (?::int % 7)], 1, 1, 1, 1, now(), now(), 'evt_live')
       ON CONFLICT (meter_id, customer_entity_id, bucket_start, group_values) DO UPDATE SET sum = meter_rollups.sum + excluded.sum, count = meter_rollups.count + excluded.count`,
      [meter, org, n, n, n],
    );
    log.slowestMs = Math.max(log.slowestMs, performance.now() - started);
    if (n > SEEDED) log.inserted += 1;
    log.added += 1;
  }
  return log;
}

const keyDefinition = async () =>
  (await db.raw<{ rows: Array<{ definition: string }> }>(`SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conname = 'meter_rollups_pkey'`)).rows.map((row) => row.definition);

it('when the key is rebuilt while rollups are written, then no row is lost or doubled, no writer waits a second, a customer reads from the key alone, and the step back restores the plain key', async () => {
  await seed();
  // What a build cut short would leave behind: the migration builds the index again.
  await db.raw(`CREATE INDEX meter_rollups_key_next ON meter_rollups (meter_id)`);
  let done = false;
  const writer = write(() => done);
  await new Promise((resolve) => setTimeout(resolve, 200));
  try {
    await db.migrate.up({ name: MIGRATION });
  } finally {
    done = true;
  }
  const log = await writer;
  expect(log.inserted).toBeGreaterThan(0);
  expect(log.slowestMs).toBeLessThan(1_000);
  expect(await keyDefinition()).toEqual(['PRIMARY KEY (meter_id, customer_entity_id, bucket_start, group_values) INCLUDE (sum, count, max)']);
  const [totals] = await db('meter_rollups').where({ meter_id: meter }).select(db.raw('count(*)::int AS rows, sum(sum)::text AS sum, sum(count)::int AS count'));
  expect(totals).toEqual({ rows: SEEDED + log.inserted, sum: String((SEEDED * (SEEDED + 1)) / 2 + log.added), count: SEEDED + log.added });
  const indexes = await db.raw<{ rows: Array<{ indexname: string }> }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'meter_rollups' ORDER BY indexname`);
  expect(indexes.rows.map((row) => row.indexname)).toEqual(['meter_rollups_meter_bucket', 'meter_rollups_pkey']);

  // One customer's month by day, as a meter query folds it: from the key alone once the table is vacuumed.
  await db.raw('VACUUM ANALYZE meter_rollups');
  const plan = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(
    `EXPLAIN SELECT date_trunc('day', bucket_start AT TIME ZONE 'UTC') AS day, group_values[1] AS model, sum(sum)
     FROM meter_rollups WHERE meter_id = ? AND customer_entity_id = 'ent_3' AND bucket_start >= '2026-08-01' AND bucket_start < '2026-09-01' GROUP BY 1, 2`,
    [meter],
  );
  expect(plan.rows.map((row) => row['QUERY PLAN']).join('\n')).toMatch(/Index Only Scan using meter_rollups_pkey/);

  await db.migrate.down({ name: MIGRATION });
  expect(await keyDefinition()).toEqual(['PRIMARY KEY (meter_id, customer_entity_id, bucket_start, group_values)']);
  const [after] = await db('meter_rollups').where({ meter_id: meter }).select(db.raw('count(*)::int AS rows'));
  expect(after).toEqual({ rows: SEEDED + log.inserted });
});
