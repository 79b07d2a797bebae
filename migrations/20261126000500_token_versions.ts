import type { Knex } from 'knex';

/**
 * Access tokens carry the version of their app or user: rotating an app's secret bumps it, and deleting the
 * app or user removes it, so the sessions they opened end at once rather than when their tokens expire.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of ['apps', 'users']) {
    await knex.schema.alterTable(table, (t) => {
      t.integer('token_version').notNullable().defaultTo(0);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['apps', 'users']) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('token_version');
    });
  }
}
