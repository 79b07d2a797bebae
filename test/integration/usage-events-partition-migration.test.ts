import type { Knex } from 'knex';
import { createUsageRepository } from '../../src/modules/usage/usage.repository';
import { maintainPartitions, monthOf, partitionName } from '../../src/modules/usage/event-partitions';
import { databaseBefore } from './support/migration-database';

/**
 * The move of `usage_events` into monthly partitions, on a database of its own holding 30,000 events of
 * the unpartitioned table, while a writer keeps inserting, editing and deleting events through the table's
 * name. After it: every event is where it should be (its month's partition, or the default one), none is
 * lost or doubled, every eventId is claimed, and no statement of the writer waited a second.
 */
const MIGRATION = '20261127010000_usage_events_partitioned.ts';
const SEEDED = 30_000;
const org = 'org_partitioned';
let db: Knex;
let writerDb: Knex;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ db, writer: writerDb, drop } = await databaseBefore(MIGRATION, 'partitions'));
});

afterAll(async () => {
  await drop();
});

async function seed(): Promise<void> {
  await db('organisations').insert({ id: org, name: 'Partitioned Ltd' });
  await db('customers').insert({ organisation_id: org, id: 'cus_partitioned', name: 'Customer' });
  await db('entities').insert({ organisation_id: org, id: 'ent_partitioned', type: 'customer', name: 'Entity', customer_id: 'cus_partitioned' });
  // Events n = 1..30,000 of value n, spread over August to November 2026; two of them past any partition.
  await db.raw(
    `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id)
     SELECT 'evt_seed_' || lpad(n::text, 6, '0'), ?, 'ent_partitioned', 'calls', n,
            timestamptz '2026-08-01 00:00:00+00' + (n * interval '5 minutes' * 3.5),
            jsonb_build_object('n', n), CASE WHEN n % 3 = 0 THEN NULL ELSE 'key-' || n END
     FROM generate_series(1, ?) AS n`,
    [org, SEEDED - 2],
  );
  await db('usage_events').insert([
    { id: 'evt_seed_far_ahead', organisation_id: org, customer_entity_id: 'ent_partitioned', metric: 'calls', value: SEEDED - 1, timestamp: '2200-01-15T00:00:00Z', event_id: 'key-far-ahead' },
    { id: 'evt_seed_long_ago', organisation_id: org, customer_entity_id: 'ent_partitioned', metric: 'calls', value: SEEDED, timestamp: '0500-06-01T00:00:00Z', event_id: 'key-long-ago' },
  ]);
}

interface WriterLog {
  inserted: number;
  insertedValue: number;
  edited: number;
  deletedValue: number;
  deleted: number;
  slowestMs: number;
}

/** Inserts, edits (value + 1) and deletes events through the table's name until `stop`; times each statement. */
async function write(stop: () => boolean): Promise<WriterLog> {
  const log: WriterLog = { inserted: 0, insertedValue: 0, edited: 0, deletedValue: 0, deleted: 0, slowestMs: 0 };
  for (let i = 0; !stop(); i += 1) {
    const started = performance.now();
    if (i % 3 === 0) {
      await writerDb('usage_events').insert({ id: `evt_live_${i}`, organisation_id: org, customer_entity_id: 'ent_partitioned', metric: 'calls', value: 2, timestamp: '2026-11-20T00:00:00Z', event_id: `live-${i}` });
      log.inserted += 1;
      log.insertedValue += 2;
    } else if (i % 3 === 1) {
      // Seeded events 1..9,000 by threes of i: each edited once at most.
      const n = String(i).padStart(6, '0');
      log.edited += await writerDb('usage_events').where({ id: `evt_seed_${n}` }).increment('value', 1);
    } else {
      const n = String(SEEDED - 2 - i).padStart(6, '0');
      const rows: { value: string }[] = await writerDb('usage_events').where({ id: `evt_seed_${n}` }).delete().returning('value');
      log.deleted += rows.length;
      log.deletedValue += rows.reduce((sum, row) => sum + Number(row.value), 0);
    }
    log.slowestMs = Math.max(log.slowestMs, performance.now() - started);
  }
  return log;
}

it('when the event table with rows is partitioned while it is written, then no event is lost or doubled, each is in its month, eventIds stay claimed, no writer waits a second, and the move starts again over what a cut-short one left but is never done twice', async () => {
  await seed();
  // What a move cut short would leave: the migration starts it again.
  await db.raw('CREATE TABLE usage_events_partitioned (leftover int)');
  await db.raw('CREATE TABLE usage_event_keys (leftover int)');
  let done = false;
  const writer = write(() => done);
  // The writer has a head start on the old table.
  await new Promise((resolve) => setTimeout(resolve, 200));
  try {
    await db.migrate.up({ name: MIGRATION });
  } finally {
    done = true;
  }
  const log = await writer;
  expect(log.inserted).toBeGreaterThan(0);
  expect(log.edited).toBeGreaterThan(0);
  expect(log.deleted).toBeGreaterThan(0);
  expect(log.slowestMs).toBeLessThan(1_000);

  const seededSum = (SEEDED * (SEEDED + 1)) / 2;
  const [totals] = await db('usage_events').where({ organisation_id: org }).select(db.raw('count(*)::int AS count, sum(value)::text AS sum, count(DISTINCT id)::int AS ids'));
  expect(totals).toEqual({
    count: SEEDED + log.inserted - log.deleted,
    ids: SEEDED + log.inserted - log.deleted,
    sum: `${seededSum + log.insertedValue + log.edited - log.deletedValue}.0000000000`,
  });

  const placement = await db.raw<{ rows: { partition: string; count: number }[] }>(
    `SELECT tableoid::regclass::text AS partition, count(*)::int AS count FROM usage_events GROUP BY 1 ORDER BY 1`,
  );
  const partitions = placement.rows.map((row) => row.partition);
  expect(partitions).toEqual(expect.arrayContaining(['usage_events_2026_08', 'usage_events_2026_09', 'usage_events_2026_10', 'usage_events_2026_11', 'usage_events_default']));
  const misplaced = await db.raw<{ rows: unknown[] }>(
    `SELECT id FROM usage_events WHERE tableoid::regclass::text <> 'usage_events_' || to_char("timestamp" AT TIME ZONE 'UTC', 'YYYY_MM') AND tableoid::regclass::text <> 'usage_events_default'`,
  );
  expect(misplaced.rows).toEqual([]);
  const inDefault = await db.raw<{ rows: { id: string }[] }>('SELECT id FROM usage_events_default ORDER BY id');
  // A month of a four-digit year has a partition of its own (2200-01 too); year 500 stays in the default one.
  expect(inDefault.rows.map((row) => row.id)).toEqual(['evt_seed_long_ago']);
  expect(partitions).toContain('usage_events_2200_01');

  // Every event stored before the move with an eventId holds its key (the writer's own inserts go around the
  // ingestion statement, which is what claims keys once the table is partitioned).
  const unclaimed = await db.raw<{ rows: unknown[] }>(
    `SELECT e.id FROM usage_events e LEFT JOIN usage_event_keys k ON k.organisation_id = e.organisation_id AND k.event_id = e.event_id AND k.usage_event_id = e.id
     WHERE e.event_id IS NOT NULL AND e.id LIKE 'evt_seed_%' AND k.event_id IS NULL`,
  );
  expect(unclaimed.rows).toEqual([]);

  // Dedupe is permanent across months: an August eventId sent again with a November timestamp is skipped.
  const repository = createUsageRepository(db);
  const stored = await repository.insertEvents(org, 'ubt_after', [
    { customerEntityId: 'ent_partitioned', metric: 'calls', value: '1', timestamp: new Date('2026-11-26T00:00:00Z'), metadata: null, eventId: 'key-1', jobId: null },
    { customerEntityId: 'ent_partitioned', metric: 'calls', value: '1', timestamp: new Date('2026-11-26T00:00:00Z'), metadata: null, eventId: 'key-new', jobId: null },
  ]);
  expect(stored.map((row) => row.event_id)).toEqual(['key-new']);

  // An event of a month with no partition lands in the default one; the daily upkeep moves it to its own month's.
  const [farAhead] = await repository.insertEvents(org, 'ubt_after', [
    { customerEntityId: 'ent_partitioned', metric: 'calls', value: '1', timestamp: new Date('2199-03-10T00:00:00Z'), metadata: null, eventId: 'key-2199', jobId: null },
  ]);
  const partitionOf = async (id: string) => (await db.raw<{ rows: { partition: string }[] }>('SELECT tableoid::regclass::text AS partition FROM usage_events WHERE id = ?', [id])).rows;
  expect(await partitionOf(farAhead!.id)).toEqual([{ partition: 'usage_events_default' }]);
  const upkeep = await maintainPartitions(db, new Date());
  expect(upkeep.created).toContain('2199-03');
  expect(upkeep.moved).toBe(1);
  expect(await partitionOf(farAhead!.id)).toEqual([{ partition: partitionName(monthOf(new Date('2199-03-10T00:00:00Z'))) }]);
  expect(await repository.findEvent(org, farAhead!.id)).toMatchObject({ event_id: 'key-2199' });
  // A second run has nothing left to do.
  expect(await maintainPartitions(db, new Date())).toEqual({ created: [], moved: 0 });

  // The migration run again once its swap committed (its record lost, say) changes nothing.
  const keysBefore = await db('usage_event_keys').count({ n: '*' });
  const migration = (await import(`../../migrations/${MIGRATION.replace(/\.ts$/, '')}`)) as { up: (knex: Knex) => Promise<void> };
  await migration.up(db);
  expect(await db('usage_event_keys').count({ n: '*' })).toEqual(keysBefore);
  expect(await partitionOf(farAhead!.id)).toEqual([{ partition: 'usage_events_2199_03' }]);
});
