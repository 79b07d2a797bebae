import type { Knex } from 'knex';

/**
 * Automatic billing: invoice runs, the periods each has billed (a unique key, so nothing is billed twice),
 * each plan item's billing timing, each contract's billing anchor, and the days a contract was suspended.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invoice_runs', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('status').notNullable().defaultTo('running');
    table.date('billing_date').notNullable();
    table.boolean('dry_run').notNullable().defaultTo(false);
    // The contracts the run was asked to bill; null: every contract with something due.
    table.jsonb('contract_ids');
    table.text('schedule_id');
    table.text('workflow_id').notNullable();
    table.integer('contracts_total').notNullable().defaultTo(0);
    table.text('created_by');
    table.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('completed_at', { useTz: true });
    table.timestamps(true, true);
    table.index(['organisation_id', 'started_at']);
  });
  await knex.raw("ALTER TABLE invoice_runs ADD CONSTRAINT invoice_runs_status_check CHECK (status IN ('running', 'completed', 'failed'))");
  await knex.raw('CREATE UNIQUE INDEX invoice_runs_workflow_unique ON invoice_runs (workflow_id)');

  // One row per contract a run bills: its outcome, written with the contract's invoices, so a retried
  // activity or a rerun finds it; the run's progress and totals are counted from these rows.
  await knex.schema.createTable('invoice_run_contracts', (table) => {
    table.text('invoice_run_id').notNullable().references('invoice_runs.id').onDelete('CASCADE');
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE');
    table.text('organisation_id').notNullable();
    table.text('status').notNullable();
    // [{invoiceId, currency, total}] made, or for a dry run the invoices it would make, whole.
    table.jsonb('invoices').notNullable().defaultTo('[]');
    table.text('error_code');
    table.text('error');
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['invoice_run_id', 'contract_id']);
  });
  await knex.raw("ALTER TABLE invoice_run_contracts ADD CONSTRAINT invoice_run_contracts_status_check CHECK (status IN ('billed', 'failed'))");

  await knex.schema.alterTable('invoices', (table) => {
    table.text('invoice_run_id').references('invoice_runs.id');
  });
  await knex.raw('CREATE INDEX invoices_invoice_run_idx ON invoices (organisation_id, invoice_run_id) WHERE invoice_run_id IS NOT NULL');

  await knex.schema.createTable('billed_periods', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('contract_plan_id').notNullable().references('contract_plans.id').onDelete('CASCADE');
    table.text('plan_item_id').notNullable().references('billing_plan_items.id');
    table.date('period_from').notNullable();
    table.date('period_to').notNullable();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.text('invoice_run_id').references('invoice_runs.id');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // The key that makes double billing impossible, whatever reruns, retries or crashes do.
    table.primary(['contract_plan_id', 'plan_item_id', 'period_from']);
  });

  await knex.schema.alterTable('billing_plan_items', (table) => {
    table.text('billing_timing');
  });
  // Existing items keep the defaults: metered items in arrears, the rest in advance.
  await knex.raw("UPDATE billing_plan_items SET billing_timing = CASE WHEN meter_id IS NULL THEN 'in_advance' ELSE 'in_arrears' END");
  await knex.raw('ALTER TABLE billing_plan_items ALTER COLUMN billing_timing SET NOT NULL');
  await knex.raw("ALTER TABLE billing_plan_items ADD CONSTRAINT billing_plan_items_timing_check CHECK (billing_timing IN ('in_advance', 'in_arrears'))");

  await knex.schema.alterTable('contracts', (table) => {
    table.text('billing_anchor').notNullable().defaultTo('calendar');
  });
  await knex.raw("ALTER TABLE contracts ADD CONSTRAINT contracts_billing_anchor_check CHECK (billing_anchor IN ('calendar', 'anniversary'))");

  await knex.schema.createTable('contract_suspensions', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE').index();
    table.date('from_date').notNullable();
    // Null while the contract is still suspended.
    table.date('to_date');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contract_suspensions');
  await knex.schema.alterTable('contracts', (table) => table.dropColumn('billing_anchor'));
  await knex.schema.alterTable('billing_plan_items', (table) => table.dropColumn('billing_timing'));
  await knex.schema.dropTable('billed_periods');
  await knex.schema.alterTable('invoices', (table) => table.dropColumn('invoice_run_id'));
  await knex.schema.dropTable('invoice_run_contracts');
  await knex.schema.dropTable('invoice_runs');
}
