import type { Knex } from 'knex';

/**
 * Prices per dimension value on metered plan items. A plan item gains `dimensional_prices` (the entries,
 * each a `match` of dimension values and a price) and `presentation_group_by` (dimension keys its lines
 * are split by); its own `pricing_model` becomes optional, as an item priced per dimension value alone
 * has none. An invoice line gains `dimensions`, the values it charges for, and a charge `dimensions_key`,
 * the price entry it charged, so that later usage is charged per entry as a difference.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('billing_plan_items', (table) => {
    table.jsonb('dimensional_prices');
    table.jsonb('presentation_group_by');
  });
  await knex.raw('ALTER TABLE billing_plan_items ALTER COLUMN pricing_model DROP NOT NULL');
  await knex.raw("ALTER TABLE billing_plan_items ADD CONSTRAINT billing_plan_items_priced_check CHECK (pricing_model IS NOT NULL OR jsonb_typeof(dimensional_prices) = 'array' AND jsonb_array_length(dimensional_prices) > 0)");
  await knex.schema.alterTable('invoice_items', (table) => {
    table.jsonb('dimensions');
  });
  await knex.schema.alterTable('charges', (table) => {
    table.text('dimensions_key');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('charges', (table) => {
    table.dropColumn('dimensions_key');
  });
  await knex.schema.alterTable('invoice_items', (table) => {
    table.dropColumn('dimensions');
  });
  // An item priced per dimension value alone has no price to fall back to: it cannot be kept.
  const unpriced = await knex('billing_plan_items').whereNull('pricing_model').first('id');
  if (unpriced) throw new Error(`plan item ${String(unpriced.id)} is priced per dimension value alone: remove it before going back`);
  await knex.raw('ALTER TABLE billing_plan_items DROP CONSTRAINT billing_plan_items_priced_check');
  await knex.raw('ALTER TABLE billing_plan_items ALTER COLUMN pricing_model SET NOT NULL');
  await knex.schema.alterTable('billing_plan_items', (table) => {
    table.dropColumn('dimensional_prices');
    table.dropColumn('presentation_group_by');
  });
}
