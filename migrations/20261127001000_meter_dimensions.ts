import type { Knex } from 'knex';

/**
 * Meters gain dimensions: `group_by`, the metadata keys a meter's usage can be split by, and `filters`,
 * the conditions on metadata an event must meet to count for the meter. Existing meters get neither.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('meters', (table) => {
    table.jsonb('group_by').notNullable().defaultTo(knex.raw("'[]'::jsonb"));
    table.jsonb('filters').notNullable().defaultTo(knex.raw("'[]'::jsonb"));
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('meters', (table) => {
    table.dropColumn('group_by');
    table.dropColumn('filters');
  });
}
