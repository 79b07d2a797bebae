import type { Knex } from 'knex';

/**
 * A batch stored under an Idempotency-Key keeps a fingerprint of its events (SHA-256 of their JSON), so that
 * the same key sent with other events is refused instead of answering the first batch's outcome for them.
 * Batches stored before have none, and are found by their key alone, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_batches', (table) => {
    table.text('events_fingerprint');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_batches', (table) => {
    table.dropColumn('events_fingerprint');
  });
}
