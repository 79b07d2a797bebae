import type { Knex } from 'knex';

/**
 * `usage_events` becomes a table partitioned by range of the event's `timestamp`, one partition per UTC
 * month (`usage_events_2026_11`) and a default partition for months that have none yet. Postgres lets a
 * partitioned table's unique indexes hold only keys that include the partition key, so the deduplication
 * key moves to `usage_event_keys` (organisation, eventId), an ordinary table that ingestion claims in the
 * same statement as it writes the rows: dedupe stays permanent, whatever month an event is of.
 *
 * The rows move while the table stays in use, and no lock is held longer than one slice:
 *
 * 1. the partitioned table is made beside the old one, with a partition for every month the old rows are
 *    of, the current month and the three after it, and the default partition;
 * 2. a trigger on the old table repeats every insert, update and delete on the new one, so that nothing
 *    written during the move is missed;
 * 3. the old rows are copied in slices of `SLICE` by id, each slice a transaction that holds the old table
 *    in SHARE mode (writers wait for one slice, readers never) and skips a row the trigger copied already;
 *    each slice also claims its rows' eventIds;
 * 4. one short transaction (`lock_timeout` 1 s, tried again if a long reader holds the table) drops the
 *    trigger and the old table, and gives the new table and its indexes their names.
 *
 * A move cut short (the process stopped) starts again from the beginning when the migration runs again;
 * one whose swap committed is not done twice.
 *
 * Not in a transaction of its own (each step takes its own), since the copy is a series of them.
 */
export const config = { transaction: false };

const SLICE = 5_000;
const SWAP_ATTEMPTS = 20;
const COLUMNS = 'id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, job_id, batch_id, created_at, updated_at';

/** The name of a month's partition: `usage_events_2026_11` for November 2026 (UTC). */
const partitionName = (month: Date) => `usage_events_${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
const nextMonth = (month: Date) => new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1));

async function createPartitioned(knex: Knex, table: string): Promise<void> {
  await knex.raw(`
    CREATE TABLE ${table} (
      id text NOT NULL,
      organisation_id text NOT NULL REFERENCES organisations(id) ON DELETE CASCADE,
      customer_entity_id text NOT NULL REFERENCES entities(id),
      metric text NOT NULL,
      value numeric(30, 10) NOT NULL,
      "timestamp" timestamptz NOT NULL,
      metadata jsonb,
      event_id text,
      job_id text,
      batch_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT ${table}_pkey PRIMARY KEY (id, "timestamp")
    ) PARTITION BY RANGE ("timestamp")`);
  // What meters, rollup backfills and invoice runs read: one metric of one entity over a time range.
  await knex.raw(`CREATE INDEX ${table}_meter_lookup_covering ON ${table} (organisation_id, metric, customer_entity_id, "timestamp") INCLUDE (value)`);
  // What the totals fold and the event list read: an organisation's events in the order written.
  await knex.raw(`CREATE INDEX ${table}_organisation_idx ON ${table} (organisation_id, created_at)`);
  await knex.raw(`CREATE TABLE ${table}_default PARTITION OF ${table} DEFAULT`);
}

async function createMonth(knex: Knex, table: string, month: Date): Promise<void> {
  await knex.raw(`CREATE TABLE IF NOT EXISTS ${partitionName(month)} PARTITION OF ${table} FOR VALUES FROM ('${month.toISOString()}') TO ('${nextMonth(month).toISOString()}')`);
}

/** Postgres's "lock not available": the swap waited its second and gave up. */
const isLockTimeout = (error: unknown) => (error as { code?: string }).code === '55P03';

/** Whether `usage_events` is partitioned already: the swap committed, though its migration may not be recorded. */
async function partitioned(knex: Knex): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: { kind: string }[] }>("SELECT relkind AS kind FROM pg_class WHERE relname = 'usage_events' AND relnamespace = current_schema()::regnamespace");
  return rows[0]?.kind === 'p';
}

export async function up(knex: Knex): Promise<void> {
  if (await partitioned(knex)) return;
  // What a move cut short left (the old table is whole until the swap): the move starts again.
  await knex.raw('DROP TRIGGER IF EXISTS usage_events_follow ON usage_events');
  await knex.raw('DROP FUNCTION IF EXISTS usage_events_follow()');
  await knex.raw('DROP TABLE IF EXISTS usage_events_partitioned');
  await knex.raw('DROP TABLE IF EXISTS usage_event_keys');
  await knex.raw(`
    CREATE TABLE usage_event_keys (
      organisation_id text NOT NULL,
      event_id text NOT NULL,
      usage_event_id text NOT NULL,
      PRIMARY KEY (organisation_id, event_id)
    )`);

  await createPartitioned(knex, 'usage_events_partitioned');
  const { rows: monthsOfRows } = await knex.raw<{ rows: { month: Date }[] }>(
    `SELECT DISTINCT date_trunc('month', "timestamp" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month FROM usage_events ORDER BY 1`,
  );
  const now = new Date();
  let month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const months = new Map<string, Date>(monthsOfRows.map((row) => [row.month.toISOString(), row.month]));
  for (let ahead = 0; ahead < 4; ahead += 1, month = nextMonth(month)) months.set(month.toISOString(), month);
  // A partition's name holds a four-digit year; an event of another era stays in the default partition.
  for (const start of months.values()) if (start.getUTCFullYear() >= 1000 && start.getUTCFullYear() <= 9999) await createMonth(knex, 'usage_events_partitioned', start);

  await knex.raw(`
    CREATE FUNCTION usage_events_follow() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM usage_events_partitioned WHERE id = OLD.id;
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO usage_events_partitioned (${COLUMNS}) VALUES (${COLUMNS.replace(/(^|, )/g, '$1NEW.')});
        IF NEW.event_id IS NOT NULL THEN
          INSERT INTO usage_event_keys (organisation_id, event_id, usage_event_id) VALUES (NEW.organisation_id, NEW.event_id, NEW.id) ON CONFLICT DO NOTHING;
        END IF;
      END IF;
      RETURN NULL;
    END $$`);
  await knex.raw('CREATE TRIGGER usage_events_follow AFTER INSERT OR UPDATE OR DELETE ON usage_events FOR EACH ROW EXECUTE FUNCTION usage_events_follow()');

  let last = '';
  for (;;) {
    const copied = await knex.transaction(async (trx) => {
      await trx.raw('LOCK TABLE usage_events IN SHARE MODE');
      const { rows } = await trx.raw<{ rows: { last: string | null; count: number }[] }>(
        `WITH slice AS (
           SELECT ${COLUMNS} FROM usage_events WHERE id > ? ORDER BY id LIMIT ${SLICE}
         ), copied AS (
           INSERT INTO usage_events_partitioned (${COLUMNS})
           SELECT ${COLUMNS} FROM slice WHERE NOT EXISTS (SELECT 1 FROM usage_events_partitioned copy WHERE copy.id = slice.id)
         ), claimed AS (
           INSERT INTO usage_event_keys (organisation_id, event_id, usage_event_id)
           SELECT organisation_id, event_id, id FROM slice WHERE event_id IS NOT NULL ON CONFLICT DO NOTHING
         )
         SELECT max(id) AS last, count(*)::int AS count FROM slice`,
        [last],
      );
      return rows[0]!;
    });
    if (copied.count === 0 || copied.last === null) break;
    last = copied.last;
  }

  for (let attempt = 1; ; attempt += 1) {
    try {
      await knex.transaction(async (trx) => {
        await trx.raw("SET LOCAL lock_timeout = '1s'");
        await trx.raw('LOCK TABLE usage_events IN ACCESS EXCLUSIVE MODE');
        await trx.raw('DROP TABLE usage_events');
        await trx.raw('DROP FUNCTION usage_events_follow()');
        await trx.raw('ALTER TABLE usage_events_partitioned RENAME TO usage_events');
        await trx.raw('ALTER TABLE usage_events_partitioned_default RENAME TO usage_events_default');
        for (const suffix of ['pkey', 'meter_lookup_covering', 'organisation_idx']) {
          await trx.raw(`ALTER INDEX usage_events_partitioned_${suffix} RENAME TO usage_events_${suffix}`);
        }
      });
      return;
    } catch (error) {
      if (!isLockTimeout(error) || attempt === SWAP_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Back to one table, in one transaction: for a database that must return to the code before this. */
export async function down(knex: Knex): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('ALTER TABLE usage_events RENAME TO usage_events_partitioned');
    await trx.raw('ALTER INDEX usage_events_pkey RENAME TO usage_events_partitioned_pkey');
    await trx.raw('ALTER INDEX usage_events_meter_lookup_covering RENAME TO usage_events_partitioned_meter_lookup_covering');
    await trx.raw('ALTER INDEX usage_events_organisation_idx RENAME TO usage_events_partitioned_organisation_idx');
    await trx.schema.createTable('usage_events', (table) => {
      table.text('id').primary();
      table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
      table.text('customer_entity_id').notNullable().references('entities.id');
      table.text('metric').notNullable();
      table.decimal('value', 30, 10).notNullable();
      table.timestamp('timestamp', { useTz: true }).notNullable();
      table.jsonb('metadata');
      table.text('event_id');
      table.text('job_id');
      table.text('batch_id');
      table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(trx.fn.now());
      table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(trx.fn.now());
    });
    await trx.raw(`INSERT INTO usage_events (${COLUMNS}) SELECT ${COLUMNS} FROM usage_events_partitioned`);
    await trx.raw('DROP TABLE usage_events_partitioned');
    await trx.raw('DROP TABLE usage_event_keys');
    await trx.raw('CREATE UNIQUE INDEX usage_events_event_id_unique ON usage_events (organisation_id, event_id) WHERE event_id IS NOT NULL');
    await trx.raw('CREATE INDEX usage_events_meter_lookup_covering ON usage_events (organisation_id, metric, customer_entity_id, "timestamp") INCLUDE (value)');
    await trx.raw('CREATE INDEX usage_events_organisation_idx ON usage_events (organisation_id, created_at)');
  });
}
