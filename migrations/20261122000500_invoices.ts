import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invoices', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('customer_id').references('customers.id').index();
    table.text('contract_id');
    table.text('contract_plan_id');
    table.text('status').notNullable().defaultTo('draft').checkIn(['draft', 'raised', 'sent', 'paid', 'cancelled']);
    // Assigned at the first raise and kept for this invoice even if the raise is undone.
    table.text('number');
    table.integer('number_sequence');
    table.string('currency', 3).notNullable();
    table.date('date').notNullable();
    table.date('from_date');
    table.date('to_date');
    table.decimal('subtotal', 24, 4);
    table.decimal('tax_total', 24, 4);
    table.decimal('total', 24, 4);
    table.string('base_currency', 3);
    table.decimal('fx_rate', 30, 12);
    table.decimal('base_total', 24, 4);
    table.date('paid_date');
    table.text('comments');
    table.jsonb('data').notNullable().defaultTo('{}');
    table.timestamp('raised_at', { useTz: true });
    table.timestamp('sent_at', { useTz: true });
    table.timestamp('paid_at', { useTz: true });
    table.timestamp('cancelled_at', { useTz: true });
    table.timestamps(true, true);
    table.timestamp('deleted_at', { useTz: true });
    table.unique(['organisation_id', 'number']);
  });
  await knex.schema.createTable('invoice_items', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE').index();
    // Set when the item bills a plan item; a contract tax may apply to named plan items only.
    table.text('plan_item_id');
    table.text('title').notNullable();
    table.text('description');
    table.decimal('quantity', 24, 6).notNullable();
    table.decimal('price', 24, 6).notNullable();
    table.decimal('amount', 24, 4);
    table.date('from_date');
    table.date('to_date');
    table.timestamps(true, true);
  });
  // Gapless numbering: one counter row per organisation and series, locked in the raise's transaction.
  await knex.schema.createTable('invoice_number_counters', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('series').notNullable();
    table.integer('last_number').notNullable().defaultTo(0);
    table.primary(['organisation_id', 'series']);
  });
  // Each transition, keyed by (invoice, seq): a retried activity finds its own row and writes nothing.
  await knex.schema.createTable('invoice_transitions', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.integer('seq').notNullable();
    table.text('step').notNullable();
    table.text('from_state').notNullable();
    table.text('to_state').notNullable();
    table.jsonb('data').notNullable().defaultTo('{}');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('undone_at', { useTz: true });
    table.unique(['invoice_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invoice_transitions');
  await knex.schema.dropTable('invoice_number_counters');
  await knex.schema.dropTable('invoice_items');
  await knex.schema.dropTable('invoices');
}
