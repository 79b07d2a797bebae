import type { Knex } from 'knex';

/** A batch whose ingestion gave up is marked failed, with the reason, instead of staying `processing`. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE usage_batches DROP CONSTRAINT IF EXISTS usage_batches_status_check');
  await knex.raw("ALTER TABLE usage_batches ADD CONSTRAINT usage_batches_status_check CHECK (status IN ('processing', 'completed', 'failed'))");
  await knex.schema.alterTable('usage_batches', (table) => {
    table.text('error');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_batches', (table) => {
    table.dropColumn('error');
  });
  await knex.raw("UPDATE usage_batches SET status = 'processing' WHERE status = 'failed'");
  await knex.raw('ALTER TABLE usage_batches DROP CONSTRAINT IF EXISTS usage_batches_status_check');
  await knex.raw("ALTER TABLE usage_batches ADD CONSTRAINT usage_batches_status_check CHECK (status IN ('processing', 'completed'))");
}
