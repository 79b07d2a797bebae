import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('fx_rates', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.string('from_currency', 3).notNullable();
    table.string('to_currency', 3).notNullable();
    // One unit of from_currency buys `rate` units of to_currency.
    table.decimal('rate', 30, 12).notNullable();
    table.date('effective_date').notNullable();
    table.timestamps(true, true);
  });
  await knex.raw('ALTER TABLE fx_rates ADD CONSTRAINT fx_rates_rate_positive CHECK (rate > 0)');
  await knex.raw('ALTER TABLE fx_rates ADD CONSTRAINT fx_rates_distinct_currencies CHECK (from_currency <> to_currency)');
  // One rate per pair and day; the same index serves "latest effective_date on or before a day".
  await knex.raw(
    'CREATE UNIQUE INDEX fx_rates_pair_date_unique ON fx_rates (organisation_id, from_currency, to_currency, effective_date)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('fx_rates');
}
