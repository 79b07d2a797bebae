import type { Knex } from 'knex';

/**
 * The ledger says at what net a day was charged: each charge carries its share of the discount lines on
 * its plan item (set when the document is priced) and of the taxes that apply to it (set when the invoice
 * is raised, null before).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('charges', (table) => {
    table.specificType('discount', 'numeric').notNullable().defaultTo(0);
    table.specificType('tax', 'numeric');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('charges', (table) => {
    table.dropColumn('discount');
    table.dropColumn('tax');
  });
}
