import type { Knex } from 'knex';

/**
 * Each contract's outcome in a run carries its currency, the sum of its invoices' totals and how many it
 * made, as columns: a run's progress and totals are then one grouped scan of plain columns, instead of
 * parsing every outcome's JSON on every poll. A contract's invoices are all in the contract's currency.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoice_run_contracts', (table) => {
    table.text('currency');
    // Unbounded: a sum of lines before tax, shown as it is, never refused.
    table.decimal('total', null);
    table.integer('invoices_made').notNullable().defaultTo(0);
  });
  await knex.raw(`
    UPDATE invoice_run_contracts c SET
      currency = c.invoices -> 0 ->> 'currency',
      total = (SELECT sum((i ->> 'total')::numeric) FROM jsonb_array_elements(c.invoices) i),
      invoices_made = (SELECT count(*) FROM jsonb_array_elements(c.invoices) i WHERE i ->> 'invoiceId' IS NOT NULL)
    WHERE jsonb_array_length(c.invoices) > 0`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoice_run_contracts', (table) => {
    table.dropColumns('currency', 'total', 'invoices_made');
  });
}
