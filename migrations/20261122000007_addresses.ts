import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('addresses', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('entity_id').notNullable().references('entities.id').onDelete('CASCADE').index();
    table.text('line1').notNullable();
    table.text('line2');
    table.text('city').notNullable();
    table.text('state');
    table.text('postal_code');
    table.string('country', 2).notNullable();
    table.timestamps(true, true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('addresses');
}
