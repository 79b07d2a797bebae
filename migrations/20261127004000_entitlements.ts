import type { Knex } from 'knex';

/**
 * Features and entitlements. A feature is something a customer may be entitled to, by key; a metered one
 * counts a meter's usage, optionally narrowed by filters on the meter's dimensions. An entitlement gives one
 * customer one feature: on or off (boolean), a configuration (static), or an amount per usage period with
 * grants beyond it (metered), counted by a usage counter of the usage module. `period_end` is the end of the period last announced, which the entitlement's
 * period workflow waits for; `exhausted_period_start` the start of the period whose exhaustion was announced.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('features', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.string('key', 64).notNullable();
    table.string('name', 200).notNullable();
    table.text('meter_id').references('meters.id');
    table.jsonb('filters').notNullable().defaultTo('[]');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.unique(['organisation_id', 'key']);
  });
  await knex.raw('CREATE INDEX features_meter ON features (meter_id) WHERE meter_id IS NOT NULL');

  await knex.schema.createTable('entitlements', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('customer_id').notNullable().references('customers.id');
    table.text('feature_id').notNullable().references('features.id');
    table.text('type').notNullable();
    table.jsonb('config');
    table.decimal('usage_limit', 30, 10);
    table.text('usage_period');
    table.timestamp('anchor', { useTz: true });
    table.boolean('is_soft_limit').notNullable().defaultTo(false);
    // The time zone its periods are days of (the organisation's when it was made), and the usage counter it reads.
    table.text('time_zone');
    table.text('counter_id');
    table.timestamp('period_end', { useTz: true });
    table.timestamp('exhausted_period_start', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.unique(['customer_id', 'feature_id']);
  });
  await knex.raw("ALTER TABLE entitlements ADD CONSTRAINT entitlements_type_check CHECK (type IN ('boolean', 'static', 'metered'))");
  await knex.raw("ALTER TABLE entitlements ADD CONSTRAINT entitlements_period_check CHECK (usage_period IN ('day', 'week', 'month', 'year'))");
  await knex.raw("ALTER TABLE entitlements ADD CONSTRAINT entitlements_metered_check CHECK ((type = 'metered') = (usage_period IS NOT NULL AND anchor IS NOT NULL AND time_zone IS NOT NULL AND counter_id IS NOT NULL))");
  await knex.raw('ALTER TABLE entitlements ADD CONSTRAINT entitlements_limit_check CHECK (usage_limit >= 0)');
  await knex.raw('CREATE INDEX entitlements_feature ON entitlements (feature_id)');
  await knex.raw('CREATE INDEX entitlements_organisation_customer ON entitlements (organisation_id, customer_id)');

  await knex.schema.createTable('entitlement_grants', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('entitlement_id').notNullable().references('entitlements.id').onDelete('CASCADE');
    table.decimal('amount', 30, 10).notNullable();
    table.timestamp('effective_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true });
    table.integer('priority').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['entitlement_id', 'effective_at']);
  });
  await knex.raw('ALTER TABLE entitlement_grants ADD CONSTRAINT entitlement_grants_amount_check CHECK (amount > 0)');
  await knex.raw('ALTER TABLE entitlement_grants ADD CONSTRAINT entitlement_grants_expiry_check CHECK (expires_at IS NULL OR expires_at > effective_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('entitlement_grants');
  await knex.schema.dropTable('entitlements');
  await knex.schema.dropTable('features');
}
