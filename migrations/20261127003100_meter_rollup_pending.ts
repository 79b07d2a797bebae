import type { Knex } from 'knex';

/**
 * What chunks add to the organisation-wide totals, appended rather than merged: a chunk's transaction only
 * inserts its folded rows here (no row another chunk writes, so no lock another waits on), and a merge
 * after its batch folds them into `meter_rollup_totals`. Reads add what is still pending to the totals.
 */
export async function up(knex: Knex): Promise<void> {
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

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('meter_rollup_pending');
}
