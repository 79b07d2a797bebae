import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('revenue_records', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE').index();
    table.text('invoice_item_id').notNullable().references('invoice_items.id').onDelete('CASCADE');
    table.date('period').notNullable();
    table.integer('days').notNullable();
    table.decimal('amount', 24, 4).notNullable();
    table.string('currency', 3).notNullable();
    // recognised once raised, collected once paid, reversed once cancelled.
    table.text('status').notNullable().checkIn(['recognised', 'collected', 'reversed']);
    table.timestamps(true, true);
    table.unique(['invoice_item_id', 'period']);
  });
  await knex.raw('CREATE INDEX revenue_records_listing_idx ON revenue_records (organisation_id, period DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('revenue_records');
}
