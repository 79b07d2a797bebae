import type { Knex } from 'knex';

/**
 * An event no subscriber can ever take (a deterministic error, met again when handed on alone) is set aside
 * with its error, so that the relay goes on with the events after it instead of trying it for ever.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_events', (table) => {
    table.text('dispatch_error');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_events', (table) => {
    table.dropColumn('dispatch_error');
  });
}
