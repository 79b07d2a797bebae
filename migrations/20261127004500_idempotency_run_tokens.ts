import type { Knex } from 'knex';

/**
 * Each run that takes an idempotency key marks it with a token of its own (a UUID), so that the run, and
 * only it, can give the key back: when the statement that took the key committed but its answer was lost
 * (Postgres went away in between), the process releases the key by its token once Postgres answers, instead
 * of leaving it `running` until the lease lapses. Keys taken before this have none.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.uuid('run_token');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.dropColumn('run_token');
  });
}
