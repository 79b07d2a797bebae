import type { Knex } from 'knex';

/**
 * How long a paid or cancelled invoice keeps its workflow open for an undo. Once it has passed, the
 * workflow completes; a later Update starts a new run from the state Postgres records.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.integer('invoice_undo_window_days').notNullable().defaultTo(7);
  });
  await knex.raw(
    'ALTER TABLE organisation_settings ADD CONSTRAINT organisation_settings_undo_window_check CHECK (invoice_undo_window_days BETWEEN 0 AND 365)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.dropColumn('invoice_undo_window_days');
  });
}
