import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('usage_events', (table) => {
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
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // Deduplication key: the insert and the claim on the key are one statement.
  await knex.raw('CREATE UNIQUE INDEX usage_events_event_id_unique ON usage_events (organisation_id, event_id) WHERE event_id IS NOT NULL');
  // Meter aggregation reads one metric of one customer entity over a time range.
  await knex.raw('CREATE INDEX usage_events_meter_lookup ON usage_events (organisation_id, metric, customer_entity_id, "timestamp")');
  await knex.raw('CREATE INDEX usage_events_organisation_idx ON usage_events (organisation_id, created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('usage_events');
}
