import type { Knex } from 'knex';

/**
 * Alerts on a customer's or a contract's usage, spend or credit balance, and the triggers they fired. The
 * unique key of a trigger (alert, threshold, period start) is what makes an alert fire once per threshold
 * per period, however many workers evaluate it at once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('alerts', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('name').notNullable();
    // The customer whose usage, spend or credit it watches: the scope's own, or the contract's customer.
    table.text('customer_id').notNullable().references('customers.id').onDelete('CASCADE');
    table.text('contract_id').references('contracts.id').onDelete('CASCADE');
    table.text('metric').notNullable();
    table.text('meter_id').references('meters.id').onDelete('CASCADE');
    table.string('currency', 3);
    table.specificType('thresholds', 'numeric(24,4)[]').notNullable();
    table.text('recurring').notNullable();
    table.timestamps(true, true);
  });
  await knex.raw(`ALTER TABLE alerts ADD CONSTRAINT alerts_shape_check CHECK (
    metric IN ('usage', 'spend', 'credit_balance')
    AND recurring IN ('period', 'never')
    AND ((metric = 'usage') = (meter_id IS NOT NULL))
    AND ((metric = 'usage') = (currency IS NULL))
    AND cardinality(thresholds) BETWEEN 1 AND 20)`);
  // The relay's lookup: the alerts of the customers a batch of events names.
  await knex.raw('CREATE INDEX alerts_customer_lookup ON alerts (organisation_id, customer_id, metric)');
  await knex.raw('CREATE INDEX alerts_contract ON alerts (contract_id) WHERE contract_id IS NOT NULL');
  await knex.raw('CREATE INDEX alerts_meter ON alerts (meter_id) WHERE meter_id IS NOT NULL');

  await knex.schema.createTable('alert_triggers', (table) => {
    table.text('id').primary();
    // Its alert's organisation; no foreign key of its own: deleting either cascades through alert_id.
    table.text('organisation_id').notNullable();
    table.text('alert_id').notNullable().references('alerts.id').onDelete('CASCADE');
    table.decimal('threshold', 24, 4).notNullable();
    table.specificType('value', 'numeric').notNullable();
    table.timestamp('period_start', { useTz: true }).notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // Exactly once per threshold and period: concurrent evaluations insert ON CONFLICT DO NOTHING.
  await knex.raw('CREATE UNIQUE INDEX alert_triggers_once ON alert_triggers (alert_id, threshold, period_start)');
  await knex.raw('CREATE INDEX alert_triggers_newest ON alert_triggers (alert_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('alert_triggers');
  await knex.schema.dropTable('alerts');
}
