import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('usage_batches', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    // A retried POST with the same Idempotency-Key finds its batch instead of making another.
    table.text('idempotency_key');
    table.text('status').notNullable().defaultTo('processing').checkIn(['processing', 'completed']);
    table.integer('total').notNullable();
    table.integer('chunk_count').notNullable();
    table.integer('success');
    table.integer('failed');
    table.integer('duplicates');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('completed_at', { useTz: true });
    table.unique(['organisation_id', 'idempotency_key']);
  });
  // The claim check: workflows carry ids and ranges, the events wait here.
  await knex.schema.createTable('usage_batch_chunks', (table) => {
    table.text('batch_id').notNullable().references('usage_batches.id').onDelete('CASCADE');
    table.integer('chunk_index').notNullable();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE').index();
    table.integer('start_index').notNullable();
    table.jsonb('events');
    table.jsonb('outcome');
    table.primary(['batch_id', 'chunk_index']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('usage_batch_chunks');
  await knex.schema.dropTable('usage_batches');
}
