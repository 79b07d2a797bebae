import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contracts', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('customer_id').notNullable().references('customers.id').index();
    table.text('name');
    table.string('currency', 3).notNullable();
    table.text('status').notNullable().defaultTo('draft').checkIn(['draft', 'active', 'suspended', 'ended', 'terminated']);
    table.date('start_date').notNullable();
    table.date('end_date');
    table.timestamps(true, true);
  });
  await knex.schema.createTable('contract_plans', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE').index();
    // A plan in use by a contract cannot be deleted.
    table.text('plan_id').notNullable().references('billing_plans.id').onDelete('RESTRICT').index();
    table.date('start_date').notNullable();
    table.date('end_date');
    table.timestamps(true, true);
  });
  await knex.schema.createTable('contract_taxes', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.decimal('rate', 9, 6).notNullable();
    // null: all items; else the plan item ids it applies to.
    table.jsonb('applies_to');
    table.timestamps(true, true);
  });
  await knex.schema.createTable('contract_milestones', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE').index();
    table.text('contract_plan_id').notNullable().references('contract_plans.id').onDelete('CASCADE').index();
    table.text('plan_item_id').notNullable().references('billing_plan_items.id');
    table.text('name').notNullable();
    table.decimal('amount', 24, 4);
    table.decimal('percentage', 9, 6);
    table.date('due_date');
    table.timestamp('achieved_at', { useTz: true });
    table.text('invoice_id').references('invoices.id');
    table.timestamps(true, true);
  });
  await knex.raw('ALTER TABLE contract_milestones ADD CONSTRAINT contract_milestones_amount_or_percentage CHECK ((amount IS NULL) <> (percentage IS NULL))');
  await knex.raw('ALTER TABLE invoices ADD CONSTRAINT invoices_contract_plan_fk FOREIGN KEY (contract_plan_id) REFERENCES contract_plans(id)');
  await knex.raw('ALTER TABLE payments ADD CONSTRAINT payments_invoice_fk FOREIGN KEY (invoice_id) REFERENCES invoices(id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE payments DROP CONSTRAINT payments_invoice_fk');
  await knex.raw('ALTER TABLE invoices DROP CONSTRAINT invoices_contract_plan_fk');
  await knex.schema.dropTable('contract_milestones');
  await knex.schema.dropTable('contract_taxes');
  await knex.schema.dropTable('contract_plans');
  await knex.schema.dropTable('contracts');
}
