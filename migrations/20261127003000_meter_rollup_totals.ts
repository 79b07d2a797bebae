import type { Knex } from 'knex';

/**
 * Organisation-wide totals of each meter per UTC hour and UTC day: the meter's total (dimension -1, value
 * '{}') and one row per value of each groupBy key (dimension = its position, value a one-element array, so
 * that a null value is a key like any other). Kept beside the rollups and filled from them here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('meter_rollup_totals', (table) => {
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
    table.primary(['meter_id', 'grain', 'dimension', 'bucket_start', 'group_value']);
  });
  await knex.raw(`ALTER TABLE meter_rollup_totals
    ADD CONSTRAINT meter_rollup_totals_grain CHECK (grain IN ('hour', 'day')),
    ADD CONSTRAINT meter_rollup_totals_dimension CHECK (dimension >= -1 AND dimension < 5),
    ADD CONSTRAINT meter_rollup_totals_value CHECK (cardinality(group_value) = CASE WHEN dimension < 0 THEN 0 ELSE 1 END),
    ADD CONSTRAINT meter_rollup_totals_bucket_edge CHECK (date_trunc(grain, bucket_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' = bucket_start),
    ADD CONSTRAINT meter_rollup_totals_count_positive CHECK (count > 0)`);
  // Rollups written before the totals existed: folded in once.
  await knex.raw(`INSERT INTO meter_rollup_totals (meter_id, organisation_id, grain, dimension, bucket_start, group_value, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id)
    SELECT r.meter_id, r.organisation_id, g.grain, d.dimension, date_trunc(g.grain, r.bucket_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS total_bucket,
      CASE WHEN d.dimension < 0 THEN '{}'::text[] ELSE ARRAY[r.group_values[d.dimension + 1]] END AS total_value,
      sum(r.sum), sum(r.count), max(r.max),
      (array_agg(r.latest_value ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1],
      (array_agg(r.latest_timestamp ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1],
      (array_agg(r.latest_created_at ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1],
      (array_agg(r.latest_id ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1]
    FROM meter_rollups r
    JOIN meters m ON m.id = r.meter_id
    CROSS JOIN unnest(ARRAY['hour', 'day']) AS g(grain)
    CROSS JOIN LATERAL generate_series(-1, jsonb_array_length(m.group_by) - 1) AS d(dimension)
    GROUP BY r.meter_id, r.organisation_id, g.grain, d.dimension, total_bucket, total_value`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('meter_rollup_totals');
}
