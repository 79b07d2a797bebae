import type { Knex } from 'knex';

/**
 * A contract plan may name the customer entities whose usage it bills (null: all the customer's), so that
 * two contracts of one customer on one meter split its usage instead of each billing all of it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contract_plans', (table) => {
    table.jsonb('customer_entity_ids');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contract_plans', (table) => {
    table.dropColumn('customer_entity_ids');
  });
}
