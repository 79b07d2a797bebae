import type { Knex } from 'knex';

/**
 * Progressive billing: a contract's usage thresholds per billing period (`contracts.progressive_billing`,
 * `{"thresholds": ["100.00", ...]}`, null: off), and the claims of the thresholds crossed, one row per
 * contract, period and threshold, written in the transaction of the invoice that bills the crossing, so
 * that a threshold is invoiced once per period whatever retries or concurrent checks do.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contracts', (table) => {
    table.jsonb('progressive_billing').nullable();
  });
  await knex.schema.createTable('progressive_billing_claims', (table) => {
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE');
    table.date('period_start').notNullable();
    table.specificType('threshold', 'numeric(24,4)').notNullable();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('invoice_id').nullable().references('invoices.id').onDelete('SET NULL');
    table.specificType('usage_total', 'numeric(24,4)').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['contract_id', 'period_start', 'threshold']);
  });
  await knex.raw('ALTER TABLE progressive_billing_claims ADD CONSTRAINT progressive_billing_claims_threshold_positive CHECK (threshold > 0)');
  // The relay's check finds a batch's customers' contracts with thresholds: only those few rows are indexed.
  await knex.raw('CREATE INDEX contracts_progressive_billing ON contracts (organisation_id, customer_id) WHERE progressive_billing IS NOT NULL');
  await knex.raw('CREATE INDEX progressive_billing_claims_invoice ON progressive_billing_claims (invoice_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('progressive_billing_claims');
  await knex.schema.alterTable('contracts', (table) => {
    table.dropColumn('progressive_billing');
  });
}
