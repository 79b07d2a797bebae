import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('apps', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('role').notNullable().checkIn(['SystemUser']);
    table.text('created_by').references('users.id').onDelete('SET NULL');
    table.timestamps(true, true);
  });
  await knex.schema.createTable('app_credentials', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('app_id').notNullable().references('apps.id').onDelete('CASCADE').index();
    table.text('client_key').notNullable().unique();
    table.text('secret_hash').notNullable();
    table.timestamp('secret_rotated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('last_used_at', { useTz: true });
    table.timestamps(true, true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('app_credentials');
  await knex.schema.dropTable('apps');
}
