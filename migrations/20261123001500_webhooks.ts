import type { Knex } from 'knex';

/**
 * Outbound webhooks: endpoints with their signing secrets, the transactional outbox of events (written
 * in the transaction of the change each reports), one delivery per (endpoint, event), and every attempt.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('url').notNullable();
    table.text('description');
    // ["*"] or a list of event types.
    table.jsonb('event_types').notNullable();
    table.boolean('enabled').notNullable().defaultTo(true);
    table.text('secret').notNullable();
    // After a rotation, the old secret signs too until it expires.
    table.text('previous_secret');
    table.timestamp('previous_secret_expires_at', { useTz: true });
    // Why the endpoint was turned off by delivery (a 410 Gone), if it was.
    table.text('disabled_reason');
    table.timestamps(true, true);
    table.index(['organisation_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_events', (table) => {
    // The webhook-id every attempt of every delivery of this event carries.
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('type').notNullable();
    table.jsonb('payload').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Set once deliveries exist for every endpoint subscribed when it was dispatched.
    table.timestamp('dispatched_at', { useTz: true });
  });
  await knex.raw('CREATE INDEX webhook_events_undispatched ON webhook_events (created_at) WHERE dispatched_at IS NULL');

  await knex.schema.createTable('webhook_deliveries', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    table.text('event_id').notNullable().references('webhook_events.id').onDelete('CASCADE');
    table.text('status').notNullable().defaultTo('pending');
    table.integer('attempts').notNullable().defaultTo(0);
    table.integer('last_status_code');
    // Each redelivery runs a workflow of its own: webhook-delivery:{id}:{generation}.
    table.integer('generation').notNullable().defaultTo(0);
    table.timestamp('delivered_at', { useTz: true });
    table.timestamps(true, true);
    table.unique(['endpoint_id', 'event_id']);
    table.index(['organisation_id', 'created_at']);
  });
  await knex.raw("ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed'))");

  await knex.schema.createTable('webhook_attempts', (table) => {
    table.text('id').primary();
    table.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    table.integer('generation').notNullable();
    table.integer('attempt').notNullable();
    table.integer('status_code');
    table.integer('duration_ms').notNullable();
    // The first 1 KB of the response body, or why no response came.
    table.text('response_excerpt');
    table.text('error');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // A retried activity records its attempt once.
    table.unique(['delivery_id', 'generation', 'attempt']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_events');
  await knex.schema.dropTable('webhook_endpoints');
}
