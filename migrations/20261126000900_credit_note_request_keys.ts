import type { Knex } from 'knex';

/**
 * A credit note remembers the Idempotency-Key of the request that created it, so that a retry of a request
 * whose note was created but whose answer was lost (a 5xx, which is never a final answer) finds that note
 * instead of creating a second one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('credit_notes', (t) => {
    t.text('request_key');
  });
  await knex.raw('CREATE UNIQUE INDEX credit_notes_request_key_unique ON credit_notes (organisation_id, request_key) WHERE request_key IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS credit_notes_request_key_unique');
  await knex.schema.alterTable('credit_notes', (t) => {
    t.dropColumn('request_key');
  });
}
