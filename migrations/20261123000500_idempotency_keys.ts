import type { Knex } from 'knex';

/**
 * Idempotency keys of state-changing requests: one row per (organisation, route, key) holds the
 * fingerprint of the first request and, once it has a final answer, that answer, which every retry with
 * the same key and request gets back.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    // Method and path template, e.g. `POST /invoices/{id}/raise`.
    table.string('route', 200).notNullable();
    table.string('key', 255).notNullable();
    // SHA-256 of the request's path parameters, query and body.
    table.string('fingerprint', 64).notNullable();
    table.text('state').notNullable();
    table.integer('response_status');
    table.jsonb('response_body');
    // While `running`, no other request with the key runs before this instant.
    table.timestamp('locked_until', { useTz: true });
    table.timestamps(true, true);
    table.primary(['organisation_id', 'route', 'key']);
  });
  await knex.raw("ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('running', 'done', 'retryable'))");
  await knex.raw('CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
