import type { Knex } from 'knex';

/**
 * Corrections after an invoice is out. A credit note credits part or all of a raised, sent or paid
 * invoice, with its own gapless number series; its lines name the invoice items they credit. A customer's
 * credit balance per currency is an append-only ledger whose running balance never goes below zero, with
 * one balance row per (customer, currency) that every entry locks. A refund is a payment of a negative
 * amount that names its credit note.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.text('credit_note_number_format').notNullable().defaultTo('CN-{number:6}');
  });

  await knex.schema.createTable('credit_notes', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.text('customer_id').notNullable();
    table.text('status').notNullable().defaultTo('draft');
    table.text('number');
    table.integer('number_sequence');
    table.text('reason').notNullable();
    table.string('currency', 3).notNullable();
    table.decimal('subtotal', 24, 4).notNullable();
    table.decimal('tax_total', 24, 4).notNullable();
    table.decimal('total', 24, 4).notNullable();
    // Asked for with the credit note; what issuing did with the amount is `settlement`.
    table.boolean('refund').notNullable().defaultTo(false);
    table.text('settlement');
    table.text('refund_payment_id');
    // The last step applied (issue, void or undo), so that a retried step is a no-op.
    table.text('last_step_id');
    table.timestamp('issued_at', { useTz: true });
    table.timestamp('voided_at', { useTz: true });
    table.timestamps(true, true);
    table.unique(['organisation_id', 'number']);
    table.index(['organisation_id', 'created_at']);
    table.index(['invoice_id']);
    table.index(['organisation_id', 'customer_id']);
  });
  await knex.raw("ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_status_check CHECK (status IN ('draft', 'issued', 'voided'))");
  await knex.raw("ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_settlement_check CHECK (settlement IN ('reduces_due', 'refund', 'balance'))");
  await knex.raw('ALTER TABLE credit_notes ADD CONSTRAINT credit_notes_amounts_check CHECK (subtotal >= 0 AND tax_total >= 0 AND total > 0 AND total = subtotal + tax_total)');

  await knex.schema.createTable('credit_note_items', (table) => {
    table.text('id').primary();
    table.text('credit_note_id').notNullable().references('credit_notes.id').onDelete('CASCADE').index();
    table.text('invoice_item_id').notNullable().references('invoice_items.id').onDelete('CASCADE').index();
    table.text('title').notNullable();
    table.decimal('quantity', 24, 6);
    table.decimal('amount', 24, 4).notNullable();
    table.integer('position').notNullable();
  });
  await knex.raw('ALTER TABLE credit_note_items ADD CONSTRAINT credit_note_items_amount_check CHECK (amount >= 0)');

  await knex.schema.createTable('credit_balances', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').notNullable().references('customers.id').onDelete('CASCADE');
    table.string('currency', 3).notNullable();
    table.decimal('balance', 24, 4).notNullable().defaultTo(0);
    table.timestamps(true, true);
    table.primary(['organisation_id', 'customer_id', 'currency']);
  });
  await knex.raw('ALTER TABLE credit_balances ADD CONSTRAINT credit_balances_never_negative CHECK (balance >= 0)');

  await knex.schema.createTable('credit_ledger', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').notNullable().references('customers.id').onDelete('CASCADE');
    table.string('currency', 3).notNullable();
    table.text('kind').notNullable();
    table.decimal('amount', 24, 4).notNullable();
    table.decimal('balance_after', 24, 4).notNullable();
    table.text('reason');
    table.text('credit_note_id').references('credit_notes.id').onDelete('SET NULL');
    table.text('invoice_id').references('invoices.id').onDelete('SET NULL');
    table.timestamp('expires_at', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['organisation_id', 'customer_id', 'currency', 'created_at']);
  });
  await knex.raw("ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_kind_check CHECK (kind IN ('grant', 'purchase', 'consumption', 'expiry', 'credit_note', 'adjustment'))");
  await knex.raw('ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_balance_never_negative CHECK (balance_after >= 0 AND amount <> 0)');

  // A refund is a negative payment naming its credit note; every other payment stays positive.
  await knex.schema.alterTable('payments', (table) => {
    table.text('credit_note_id').references('credit_notes.id').onDelete('CASCADE');
  });
  await knex.raw('ALTER TABLE payments DROP CONSTRAINT payments_amount_positive');
  await knex.raw('ALTER TABLE payments ADD CONSTRAINT payments_amount_positive CHECK (amount > 0 OR (credit_note_id IS NOT NULL AND amount < 0))');
}

export async function down(knex: Knex): Promise<void> {
  await knex('payments').whereNotNull('credit_note_id').delete();
  await knex.raw('ALTER TABLE payments DROP CONSTRAINT payments_amount_positive');
  await knex.raw('ALTER TABLE payments ADD CONSTRAINT payments_amount_positive CHECK (amount > 0)');
  await knex.schema.alterTable('payments', (table) => {
    table.dropColumn('credit_note_id');
  });
  await knex.schema.dropTable('credit_ledger');
  await knex.schema.dropTable('credit_balances');
  await knex.schema.dropTable('credit_note_items');
  await knex.schema.dropTable('credit_notes');
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.dropColumn('credit_note_number_format');
  });
}
