import type { Knex } from 'knex';

/**
 * Usage counters: one customer's usage of one meter, narrowed by filters of its own, per calendar day of a
 * time zone. What reacts to usage as it arrives (entitlements, alerts) reads a period's usage as the sum of
 * at most a few hundred day rows instead of folding rollups. Ingestion adds to them in the transaction that
 * stores the events; edits, deletions and redefinitions of the meter fold the days they touch anew from
 * raw events. A counter is shared by everything that counts the same usage the same way.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('usage_counters', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').notNullable();
    table.text('meter_id').notNullable().references('meters.id').onDelete('CASCADE');
    // Conditions on metadata beyond the meter's own, as the meter's filters are written.
    table.jsonb('filters').notNullable().defaultTo('[]');
    table.text('time_zone').notNullable();
    // How many owners (an entitlement, an alert) count with it; at none it is removed.
    table.integer('owners').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX usage_counters_identity ON usage_counters (organisation_id, meter_id, customer_id, time_zone, filters)');
  await knex.raw('ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_owners_check CHECK (owners >= 0)');

  await knex.schema.createTable('usage_counter_days', (table) => {
    table.text('counter_id').notNullable().references('usage_counters.id').onDelete('CASCADE');
    table.date('day').notNullable();
    table.specificType('value', 'numeric').notNullable();
    table.primary(['counter_id', 'day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('usage_counter_days');
  await knex.schema.dropTable('usage_counters');
}
