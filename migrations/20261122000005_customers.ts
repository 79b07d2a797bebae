import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('customers', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('email');
    table.string('currency', 3);
    table.text('external_id');
    table.timestamps(true, true);
    table.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw(
    'CREATE UNIQUE INDEX customers_external_id_unique ON customers (organisation_id, external_id) WHERE external_id IS NOT NULL AND deleted_at IS NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('customers');
}
