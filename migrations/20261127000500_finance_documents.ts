import type { Knex } from 'knex';

/**
 * What finance documents print: the organisation's payment details and locale, a customer's own locale,
 * and the customer's reference and purchase order number of an invoice (and of the run that makes it).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (t) => {
    t.text('locale').notNullable().defaultTo('en-US');
    t.jsonb('payment_details');
  });
  await knex.schema.alterTable('customers', (t) => {
    t.text('locale');
  });
  for (const table of ['invoices', 'invoice_runs']) {
    await knex.schema.alterTable(table, (t) => {
      t.text('customer_reference');
      t.text('purchase_order_number');
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['invoices', 'invoice_runs']) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('customer_reference');
      t.dropColumn('purchase_order_number');
    });
  }
  await knex.schema.alterTable('customers', (t) => {
    t.dropColumn('locale');
  });
  await knex.schema.alterTable('organisation_settings', (t) => {
    t.dropColumn('locale');
    t.dropColumn('payment_details');
  });
}
