import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organisation_settings', (table) => {
    table.text('organisation_id').primary().references('organisations.id').onDelete('CASCADE');
    table.string('base_currency', 3).notNullable().defaultTo('USD');
    table.text('timezone').notNullable().defaultTo('UTC');
    table.text('invoice_number_format').notNullable().defaultTo('INV-{number:6}');
    table.integer('payment_terms_days').notNullable().defaultTo(30);
    table.boolean('auto_raise_generated_invoices').notNullable().defaultTo(false);
    table.boolean('auto_send_generated_invoices').notNullable().defaultTo(false);
    table.timestamps(true, true);
  });
  await knex.schema.createTable('organisation_attributes', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('key').notNullable();
    table.jsonb('value');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'key']);
  });
  await knex.schema.createTable('attribute_definitions', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('object_type').notNullable().checkIn(['sku', 'customer', 'entity', 'contract', 'invoice']);
    table.text('key').notNullable();
    table.text('label');
    table.text('type').notNullable().checkIn(['string', 'number', 'boolean', 'date', 'enum']);
    table.boolean('required').notNullable().defaultTo(false);
    table.jsonb('allowed_values');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'object_type', 'key']);
  });
  await knex.schema.createTable('sku_groups', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('name').notNullable();
    table.text('description');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'name']);
  });
  await knex.schema.createTable('skus', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('sku_group_id').references('sku_groups.id').onDelete('RESTRICT').index();
    table.text('code').notNullable();
    table.text('name').notNullable();
    table.text('description');
    table.jsonb('attributes').notNullable().defaultTo('{}');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'code']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('skus');
  await knex.schema.dropTable('sku_groups');
  await knex.schema.dropTable('attribute_definitions');
  await knex.schema.dropTable('organisation_attributes');
  await knex.schema.dropTable('organisation_settings');
}
