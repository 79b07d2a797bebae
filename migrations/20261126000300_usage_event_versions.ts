import type { Knex } from 'knex';

/**
 * A usage event corrected or deleted keeps its earlier version here, written by the same statement as the
 * change: the event table holds what is true now, this one what was true before. Runs bill the difference
 * (docs/billing-runs.md, "Corrections are deltas").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('usage_event_versions', (table) => {
    table.bigIncrements('seq').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    // No foreign key: a deleted event's versions outlive it.
    table.text('usage_event_id').notNullable();
    table.text('customer_entity_id').notNullable();
    table.text('metric').notNullable();
    table.decimal('value', 30, 10).notNullable();
    table.timestamp('timestamp', { useTz: true }).notNullable();
    table.jsonb('metadata');
    // What replaced this version: an edit or the deletion.
    table.text('change').notNullable();
    table.timestamp('changed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['organisation_id', 'usage_event_id', 'seq']);
  });
  await knex.raw("ALTER TABLE usage_event_versions ADD CONSTRAINT usage_event_versions_change_check CHECK (change IN ('edited', 'deleted'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('usage_event_versions');
}
