import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contact_groups', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('customer_id').notNullable().references('customers.id').index();
    table.text('name').notNullable();
    table.timestamps(true, true);
  });
  await knex.schema.createTable('contacts', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    // Deleting a group removes all of its attachments.
    table.text('contact_group_id').notNullable().references('contact_groups.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('email').notNullable();
    table.timestamps(true, true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contacts');
  await knex.schema.dropTable('contact_groups');
}
