import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('email').notNullable();
    table.text('password_hash').notNullable();
    table.text('role').notNullable().checkIn(['Admin']);
    table.timestamps(true, true);
  });
  // Admins log in with e-mail alone, so an address names one user across organisations.
  await knex.raw('CREATE UNIQUE INDEX users_email_unique ON users (lower(email))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
}
