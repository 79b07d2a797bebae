import type { Knex } from 'knex';

/**
 * Plan changes within a contract: the old contract plan ends the day before the change, a new one starts
 * on it. What the old plan's in-advance fees had paid for the days from the change on is computed when the
 * change is made and credited by the next invoice the contract gets (a line naming the change); until
 * then the change can be undone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plan_changes', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE');
    // Null once the contract plan is gone: an earlier change that had created it was undone.
    table.text('from_contract_plan_id').references('contract_plans.id').onDelete('SET NULL');
    // The contract plan the change created; null once an undo has removed it.
    table.text('to_contract_plan_id').references('contract_plans.id').onDelete('SET NULL');
    table.text('to_plan_id').notNullable().references('billing_plans.id');
    table.date('effective_date').notNullable();
    // The old contract plan's end before the change, restored by an undo.
    table.date('previous_end_date');
    table.boolean('prorate').notNullable();
    table.text('status').notNullable().defaultTo('pending');
    // [{planItemId, title, invoiceId, invoiceItemId, periodFrom, periodTo, from, to, days, periodDays, amount}]
    table.jsonb('credits').notNullable().defaultTo('[]');
    // The invoice whose lines credited the change, and what did not fit on it (added to the customer's credit).
    table.text('settled_invoice_id').references('invoices.id').onDelete('SET NULL');
    table.decimal('credited_to_balance', 24, 4);
    table.timestamp('settled_at', { useTz: true });
    table.timestamp('undone_at', { useTz: true });
    table.timestamps(true, true);
    table.index(['contract_id', 'created_at']);
  });
  await knex.raw("ALTER TABLE plan_changes ADD CONSTRAINT plan_changes_status_check CHECK (status IN ('pending', 'settled', 'undone'))");
  // The runs look up the changes still to settle, per contract.
  await knex.raw("CREATE INDEX plan_changes_pending_idx ON plan_changes (contract_id) WHERE status = 'pending'");

  // A credit line names its plan change, so that recomputing a draft's plan-derived lines keeps it.
  await knex.schema.alterTable('invoice_items', (table) => {
    table.text('plan_change_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoice_items', (table) => {
    table.dropColumn('plan_change_id');
  });
  await knex.schema.dropTable('plan_changes');
}
