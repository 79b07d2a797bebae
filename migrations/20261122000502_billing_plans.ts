import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_plans', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.string('currency', 3).notNullable();
    table.text('billing_period').notNullable().checkIn(['monthly', 'quarterly', 'yearly', 'one_time']);
    table.timestamps(true, true);
  });
  await knex.schema.createTable('billing_plan_items', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('plan_id').notNullable().references('billing_plans.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('sku_id');
    table.text('pricing_model').notNullable().checkIn(['flat', 'per_unit', 'graduated', 'volume', 'package']);
    table.decimal('unit_price', 24, 10);
    table.decimal('quantity', 24, 6);
    table.jsonb('tiers');
    table.decimal('package_size', 24, 6);
    table.text('meter_id').references('meters.id');
    table.timestamps(true, true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_plan_items');
  await knex.schema.dropTable('billing_plans');
}
