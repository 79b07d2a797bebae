import type { Knex } from 'knex';

/**
 * Coupons: a percentage or a fixed amount off, for one billing period, a number of them, or for ever. A
 * coupon applied to a contract counts one redemption; invoice runs then add its discount to the contract's
 * invoices and count the periods it has served.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('coupons', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('code').notNullable();
    table.text('name');
    table.decimal('percent_off', 7, 4);
    table.decimal('amount_off', 24, 4);
    table.string('currency', 3);
    table.text('duration').notNullable();
    table.integer('duration_periods');
    table.integer('max_redemptions');
    table.integer('redemptions').notNullable().defaultTo(0);
    table.timestamp('expires_at', { useTz: true });
    table.timestamps(true, true);
    table.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw('CREATE UNIQUE INDEX coupons_code_unique ON coupons (organisation_id, code) WHERE deleted_at IS NULL');
  await knex.raw(`ALTER TABLE coupons ADD CONSTRAINT coupons_shape_check CHECK (
    ((percent_off IS NOT NULL AND percent_off > 0 AND percent_off <= 100 AND amount_off IS NULL AND currency IS NULL)
      OR (percent_off IS NULL AND amount_off IS NOT NULL AND amount_off > 0 AND currency IS NOT NULL))
    AND duration IN ('once', 'repeating', 'forever')
    AND ((duration = 'repeating') = (duration_periods IS NOT NULL))
    AND (duration_periods IS NULL OR duration_periods > 0)
    AND (max_redemptions IS NULL OR max_redemptions > 0)
    AND redemptions >= 0 AND (max_redemptions IS NULL OR redemptions <= max_redemptions))`);

  await knex.schema.createTable('contract_coupons', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('contract_id').notNullable().references('contracts.id').onDelete('CASCADE');
    table.text('coupon_id').notNullable().references('coupons.id').onDelete('CASCADE');
    table.integer('periods_used').notNullable().defaultTo(0);
    table.timestamp('removed_at', { useTz: true });
    table.timestamps(true, true);
    table.index(['contract_id']);
  });
  // A coupon is on a contract once at a time.
  await knex.raw('CREATE UNIQUE INDEX contract_coupons_once ON contract_coupons (contract_id, coupon_id) WHERE removed_at IS NULL');
  await knex.raw('ALTER TABLE contract_coupons ADD CONSTRAINT contract_coupons_periods_check CHECK (periods_used >= 0)');

  // A discount line names its coupon (a plain id: the line stays if the coupon goes), so that recomputing
  // a draft's plan-derived lines keeps it.
  await knex.schema.alterTable('invoice_items', (table) => {
    table.text('coupon_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invoice_items', (table) => {
    table.dropColumn('coupon_id');
  });
  await knex.schema.dropTable('contract_coupons');
  await knex.schema.dropTable('coupons');
}
