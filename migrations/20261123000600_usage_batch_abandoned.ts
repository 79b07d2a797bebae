import type { Knex } from 'knex';

/**
 * `abandoned`: the submit answered 503 before any of the batch was ingested (Temporal could not be
 * reached), so none of it ever will be; the same request sent again with its Idempotency-Key revives it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE usage_batches DROP CONSTRAINT IF EXISTS usage_batches_status_check');
  await knex.raw("ALTER TABLE usage_batches ADD CONSTRAINT usage_batches_status_check CHECK (status IN ('processing', 'completed', 'failed', 'abandoned'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("UPDATE usage_batches SET status = 'failed' WHERE status = 'abandoned'");
  await knex.raw('ALTER TABLE usage_batches DROP CONSTRAINT IF EXISTS usage_batches_status_check');
  await knex.raw("ALTER TABLE usage_batches ADD CONSTRAINT usage_batches_status_check CHECK (status IN ('processing', 'completed', 'failed'))");
}
