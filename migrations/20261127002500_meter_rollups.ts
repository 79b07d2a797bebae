import type { Knex } from 'knex';

/**
 * Meter rollups: per meter, customer entity, 15-minute bucket and group values (the values at the meter's
 * `group_by` keys, in order, as text; null where an event lacks one), the sum, count and maximum of the
 * events' values and the value of the latest event with the columns that order it. Ingestion adds to them in
 * the transaction that stores the events; a backfill fills them for a meter created or redefined, its
 * progress kept on the meter. Array equality treats null elements as equal, so the unique key holds one row
 * per group however many of its values are null.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('meter_rollups', (table) => {
    table.text('meter_id').notNullable().references('meters.id').onDelete('CASCADE');
    // The meter's organisation, kept to scope rebuilds; no foreign key of its own (the meter's holds), so
    // that an ingested chunk's rows check one key, not two.
    table.text('organisation_id').notNullable();
    table.text('customer_entity_id').notNullable();
    table.timestamp('bucket_start', { useTz: true }).notNullable();
    table.specificType('group_values', 'text[]').notNullable();
    table.specificType('sum', 'numeric').notNullable();
    table.bigInteger('count').notNullable();
    table.specificType('max', 'numeric').notNullable();
    table.specificType('latest_value', 'numeric').notNullable();
    table.timestamp('latest_timestamp', { useTz: true }).notNullable();
    table.timestamp('latest_created_at', { useTz: true }).notNullable();
    table.text('latest_id').notNullable();
    table.primary(['meter_id', 'customer_entity_id', 'bucket_start', 'group_values']);
  });
  await knex.raw("ALTER TABLE meter_rollups ADD CONSTRAINT meter_rollups_bucket_edge CHECK (date_bin('15 minutes', bucket_start, timestamptz '2000-01-01 00:00:00+00') = bucket_start)");
  await knex.raw('ALTER TABLE meter_rollups ADD CONSTRAINT meter_rollups_count_positive CHECK (count > 0)');
  // Reads by meter and time over every entity (a query without a customer).
  await knex.raw('CREATE INDEX meter_rollups_meter_bucket ON meter_rollups (meter_id, bucket_start)');
  await knex.schema.alterTable('meters', (table) => {
    // pending (to fill), running, completed (rollups exact), failed (reads stay on raw events). A meter
    // written without saying is pending: only a fill, or a meter of a metric without events, completes.
    table.text('backfill_status').notNullable().defaultTo('pending');
    table.bigInteger('backfill_events_read').notNullable().defaultTo(0);
    // The instant from which events are still to be read (null: from the first).
    table.timestamp('backfill_cursor', { useTz: true });
    // Counts the meter's definitions: each redefinition fills anew, under a workflow of its own.
    table.integer('backfill_generation').notNullable().defaultTo(0);
  });
  await knex.raw("ALTER TABLE meters ADD CONSTRAINT meters_backfill_status_check CHECK (backfill_status IN ('pending', 'running', 'completed', 'failed'))");
  await knex.raw('ALTER TABLE meters ADD CONSTRAINT meters_backfill_events_read_check CHECK (backfill_events_read >= 0)');
  // Meters that exist before rollups fill from their events; those of a metric without events are complete.
  await knex.raw(`UPDATE meters SET backfill_status = 'completed' WHERE NOT EXISTS (SELECT 1 FROM usage_events e WHERE e.organisation_id = meters.organisation_id AND e.metric = meters.metric)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('meter_rollups');
  await knex.raw('ALTER TABLE meters DROP CONSTRAINT meters_backfill_status_check, DROP CONSTRAINT meters_backfill_events_read_check');
  await knex.schema.alterTable('meters', (table) => {
    table.dropColumn('backfill_status');
    table.dropColumn('backfill_events_read');
    table.dropColumn('backfill_cursor');
    table.dropColumn('backfill_generation');
  });
}
