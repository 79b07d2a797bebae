import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('entities', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('type').notNullable().checkIn(['customer', 'seller']);
    table.text('name').notNullable();
    table.text('customer_id').references('customers.id').index();
    table.text('identifier');
    table.text('tax_id');
    table.string('currency', 3);
    table.timestamps(true, true);
    table.timestamp('deleted_at', { useTz: true });
    table.index(['organisation_id', 'type']);
  });
  await knex.raw(
    'CREATE UNIQUE INDEX entities_identifier_unique ON entities (organisation_id, identifier) WHERE identifier IS NOT NULL AND deleted_at IS NULL',
  );
  await knex.raw("ALTER TABLE entities ADD CONSTRAINT entities_customer_required CHECK (type <> 'customer' OR customer_id IS NOT NULL)");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('entities');
}
