import type { Knex } from 'knex';

/**
 * An invoice raised with a total below zero owes nothing: what is below zero goes to the customer's credit
 * balance when it is raised, and is recorded here, so that what it leaves owing stays
 * `total + credited_to_balance - credits_applied - credited_due`, never below zero.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoices', (table) => {
    table.decimal('credited_to_balance', 24, 4).notNullable().defaultTo(0);
  });
  await knex.raw('ALTER TABLE invoices ADD CONSTRAINT invoices_credited_to_balance_check CHECK (credited_to_balance >= 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoices', (table) => {
    table.dropChecks(['invoices_credited_to_balance_check']);
    table.dropColumn('credited_to_balance');
  });
}
