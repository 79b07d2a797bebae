import type { Knex } from 'knex';

/**
 * Collecting invoices through a payment gateway (docs/payments.md):
 * - `payment_provider_accounts`: an organisation's gateway credentials, sealed with SECRETS_KEY;
 * - `customer_payment_providers`: the customer's account at the gateway, one per customer;
 * - `payment_attempts`: each charge of an invoice, numbered per invoice, with its state and the gateway's
 *   payment; the payment recorded when it succeeded;
 * - `payment_gateway_refunds`: each refund a credit note makes through the gateway, one per credit note;
 * - `payment_reconciliations`: the latest comparison of the gateway's payments with ours, per organisation;
 * - `payment_gateway_events`: the gateway's webhook events handled, by id, so that a redelivery does nothing;
 * - `dunning_campaigns`: how often and how far apart a failed collection is tried again, per organisation
 *   or per customer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payment_provider_accounts', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('provider').notNullable();
    table.text('secret_key').notNullable();
    table.text('webhook_secret').notNullable();
    table.text('secret_key_last4').notNullable();
    table.text('collect_on').notNullable().defaultTo('raised');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['organisation_id', 'provider']);
  });
  await knex.raw("ALTER TABLE payment_provider_accounts ADD CONSTRAINT payment_provider_accounts_collect_on CHECK (collect_on IN ('raised', 'sent'))");

  await knex.schema.createTable('customer_payment_providers', (table) => {
    table.text('customer_id').primary().references('customers.id').onDelete('CASCADE');
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('provider').notNullable();
    table.text('provider_customer_id').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.unique(['organisation_id', 'provider', 'provider_customer_id'], { indexName: 'customer_payment_providers_gateway_customer' });
  });

  await knex.schema.createTable('payment_attempts', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.text('customer_id').notNullable();
    table.integer('attempt').notNullable();
    table.text('provider').notNullable();
    table.specificType('amount', 'numeric(24,4)').notNullable();
    table.specificType('currency', 'char(3)').notNullable();
    table.text('status').notNullable().defaultTo('pending');
    table.text('provider_payment_id').nullable();
    table.text('action_url').nullable();
    table.text('failure_code').nullable();
    table.text('failure_message').nullable();
    table.text('payment_id').nullable().references('payments.id').onDelete('SET NULL');
    table.specificType('refunded_amount', 'numeric(24,4)').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('completed_at', { useTz: true }).nullable();
    table.unique(['invoice_id', 'attempt'], { indexName: 'payment_attempts_invoice_attempt' });
  });
  await knex.raw(
    "ALTER TABLE payment_attempts ADD CONSTRAINT payment_attempts_status CHECK (status IN ('pending', 'processing', 'requires_action', 'succeeded', 'failed', 'refunded'))",
  );
  await knex.raw('ALTER TABLE payment_attempts ADD CONSTRAINT payment_attempts_amount_positive CHECK (amount > 0 AND attempt > 0)');
  await knex.raw('CREATE UNIQUE INDEX payment_attempts_gateway_payment ON payment_attempts (provider, provider_payment_id) WHERE provider_payment_id IS NOT NULL');
  await knex.raw('CREATE INDEX payment_attempts_payment ON payment_attempts (payment_id) WHERE payment_id IS NOT NULL');
  await knex.raw('CREATE INDEX payment_attempts_organisation_created ON payment_attempts (organisation_id, created_at)');

  await knex.schema.createTable('payment_gateway_refunds', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('credit_note_id').notNullable().unique().references('credit_notes.id').onDelete('CASCADE');
    table.text('attempt_id').notNullable().references('payment_attempts.id').onDelete('CASCADE');
    table.specificType('amount', 'numeric(24,4)').notNullable();
    table.specificType('currency', 'char(3)').notNullable();
    table.text('status').notNullable().defaultTo('pending');
    table.text('provider_refund_id').nullable();
    table.text('failure_message').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("ALTER TABLE payment_gateway_refunds ADD CONSTRAINT payment_gateway_refunds_status CHECK (status IN ('pending', 'succeeded', 'failed'))");
  await knex.raw('ALTER TABLE payment_gateway_refunds ADD CONSTRAINT payment_gateway_refunds_amount_positive CHECK (amount > 0)');

  await knex.schema.createTable('payment_reconciliations', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('provider').notNullable();
    table.integer('days').notNullable();
    table.jsonb('differences').notNullable();
    table.timestamp('checked_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['organisation_id', 'provider']);
  });

  await knex.schema.createTable('payment_gateway_events', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('provider').notNullable();
    table.text('event_id').notNullable();
    table.text('type').notNullable();
    table.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['organisation_id', 'provider', 'event_id']);
  });

  await knex.schema.createTable('dunning_campaigns', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').nullable().references('customers.id').onDelete('CASCADE');
    table.text('name').notNullable();
    table.integer('max_attempts').notNullable();
    table.integer('days_between_attempts').notNullable();
    table.jsonb('minimum_amount_due').notNullable().defaultTo('{}');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw('ALTER TABLE dunning_campaigns ADD CONSTRAINT dunning_campaigns_bounds CHECK (max_attempts BETWEEN 1 AND 100 AND days_between_attempts BETWEEN 0 AND 365)');
  // One live campaign for the organisation (no customer), and one per customer.
  await knex.raw('CREATE UNIQUE INDEX dunning_campaigns_one_per_scope ON dunning_campaigns (organisation_id, coalesce(customer_id, \'\')) WHERE deleted_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('dunning_campaigns');
  await knex.schema.dropTable('payment_gateway_events');
  await knex.schema.dropTable('payment_reconciliations');
  await knex.schema.dropTable('payment_gateway_refunds');
  await knex.schema.dropTable('payment_attempts');
  await knex.schema.dropTable('customer_payment_providers');
  await knex.schema.dropTable('payment_provider_accounts');
}
