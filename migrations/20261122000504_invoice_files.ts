import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invoice_files', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE').index();
    table.text('filename').notNullable();
    table.text('content_type').notNullable();
    table.bigInteger('size').notNullable();
    table.text('sha256').notNullable();
    // Where the storage keeps the bytes; the default storage is the filesystem under the data directory.
    table.text('storage_key').notNullable();
    table.text('uploaded_by');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invoice_files');
}
