import type { Knex } from 'knex';

/**
 * Organisation-wide totals folded later, from the events themselves. Until now a chunk appended what it added
 * to the totals as rows of its own (about seven per event when events spread over many hours), and a merge
 * after each batch folded them in: most of what ingestion with a meter cost. Now a chunk's transaction writes
 * one row per meter it added to, naming the chunk (its batch and its transaction's `created_at`, which every
 * event of the chunk carries) and the quarter hours its events fall in; a fold in the worker, at most about
 * once a second per organisation, reads those chunks' events and adds them to the totals in one statement.
 * Until then a read takes every period such a chunk touches from the rollups, which are exact. Rows still
 * pending in the old form are merged here first.
 */
const COLUMNS = 'meter_id, organisation_id, grain, dimension, bucket_start, group_value, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id';
const LATEST = ['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'];

export async function up(knex: Knex): Promise<void> {
  const later = '(excluded.latest_timestamp, excluded.latest_created_at, excluded.latest_id) > (meter_rollup_totals.latest_timestamp, meter_rollup_totals.latest_created_at, meter_rollup_totals.latest_id)';
  await knex.raw(
    `INSERT INTO meter_rollup_totals (${COLUMNS})
     SELECT meter_id, organisation_id, grain, dimension, bucket_start, group_value, sum(sum), sum(count), max(max),
       ${LATEST.map((column) => `(array_agg(${column} ORDER BY latest_timestamp DESC, latest_created_at DESC, latest_id DESC))[1]`).join(', ')}
     FROM meter_rollup_pending
     GROUP BY meter_id, organisation_id, grain, dimension, bucket_start, group_value
     ON CONFLICT (meter_id, grain, dimension, bucket_start, group_value) DO UPDATE SET
       sum = meter_rollup_totals.sum + excluded.sum,
       count = meter_rollup_totals.count + excluded.count,
       max = greatest(meter_rollup_totals.max, excluded.max),
       ${LATEST.map((column) => `${column} = CASE WHEN ${later} THEN excluded.${column} ELSE meter_rollup_totals.${column} END`).join(',\n       ')}`,
  );
  await knex.schema.dropTable('meter_rollup_pending');
  await knex.schema.createTable('meter_totals_pending', (table) => {
    table.text('meter_id').notNullable().references('meters.id').onDelete('CASCADE');
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('batch_id').notNullable();
    // The chunk's transaction time: the `created_at` of each of its events.
    table.timestamp('created_at', { useTz: true }).notNullable();
    // The first and last quarter hour the chunk's events of the meter fall in.
    table.timestamp('first_bucket', { useTz: true }).notNullable();
    table.timestamp('last_bucket', { useTz: true }).notNullable();
    // One row per meter and chunk: a second chunk of the same batch in the same microsecond waits, then fails
    // and is retried, rather than being folded with the first.
    table.primary(['meter_id', 'batch_id', 'created_at']);
  });
  await knex.raw('ALTER TABLE meter_totals_pending ADD CONSTRAINT meter_totals_pending_span CHECK (first_bucket <= last_bucket)');
  await knex.raw('CREATE INDEX meter_totals_pending_organisation ON meter_totals_pending (organisation_id)');
}

export async function down(knex: Knex): Promise<void> {
  // The totals lack what pending chunks added, and the old form cannot say it: those meters read raw events
  // (exact) until redefined, which fills them anew.
  await knex.raw("UPDATE meters SET backfill_status = 'failed' WHERE id IN (SELECT meter_id FROM meter_totals_pending)");
  await knex.schema.dropTable('meter_totals_pending');
  await knex.schema.createTable('meter_rollup_pending', (table) => {
    table.bigIncrements('id');
    table.text('meter_id').notNullable().references('meters.id').onDelete('CASCADE');
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('grain').notNullable();
    table.smallint('dimension').notNullable();
    table.timestamp('bucket_start', { useTz: true }).notNullable();
    table.specificType('group_value', 'text[]').notNullable();
    table.specificType('sum', 'numeric').notNullable();
    table.bigInteger('count').notNullable();
    table.specificType('max', 'numeric').notNullable();
    table.specificType('latest_value', 'numeric').notNullable();
    table.timestamp('latest_timestamp', { useTz: true }).notNullable();
    table.timestamp('latest_created_at', { useTz: true }).notNullable();
    table.text('latest_id').notNullable();
  });
  await knex.raw(`ALTER TABLE meter_rollup_pending
    ADD CONSTRAINT meter_rollup_pending_grain CHECK (grain IN ('hour', 'day')),
    ADD CONSTRAINT meter_rollup_pending_dimension CHECK (dimension >= -1 AND dimension < 5),
    ADD CONSTRAINT meter_rollup_pending_count_positive CHECK (count > 0)`);
  await knex.raw('CREATE INDEX meter_rollup_pending_read ON meter_rollup_pending (meter_id, grain, dimension, bucket_start)');
  await knex.raw('CREATE INDEX meter_rollup_pending_organisation ON meter_rollup_pending (organisation_id)');
}
