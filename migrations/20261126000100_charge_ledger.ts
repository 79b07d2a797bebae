import type { Knex } from 'knex';
import { currencyMinorUnits } from '../src/domain/currencies';
import { roundToMinor, toDecimal } from '../src/domain/money';

/**
 * The charge ledger replaces the period keys of `billed_periods`: what was charged is recorded per plan
 * item and day range (a fee) or per usage window (usage), with its amount and the invoice that charged it,
 * so that "was this day billed, and for how much?" has one answer whatever period lengths came and went.
 * Plan terms become effective-dated: an item is in force from `effective_from` through `effective_to`,
 * and a plan's billing period is a list of versions, each from its first day.
 *
 * Existing invoices are not touched. Each billed period becomes the charge of the invoice line that billed
 * it: its days and its amount as the line states them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('charges', (table) => {
    table.text('id').primary();
    // No foreign key on the organisation and the contract: the contract plan's already guarantees them,
    // deletion included, and a run writes many rows (docs/decisions.md, "Foreign keys that repeat").
    table.text('organisation_id').notNullable();
    table.text('contract_id').notNullable();
    table.text('contract_plan_id').notNullable().references('contract_plans.id').onDelete('CASCADE');
    table.text('plan_item_id').notNullable().references('billing_plan_items.id');
    table.text('kind').notNullable();
    // The days charged: a fee's run of days, or the usage window.
    table.date('from_date').notNullable();
    table.date('to_date').notNullable();
    // The whole billing period the days belong to (a fee is prorated against it).
    table.date('period_from').notNullable();
    table.date('period_to').notNullable();
    // Usage only: the units the line charged (null where an older line did not state them). Unbounded
    // numeric: a period's usage is a sum of many events.
    table.specificType('quantity', 'numeric');
    // What the line charged for these days, rounded as the line is.
    table.specificType('amount', 'numeric').notNullable();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.text('invoice_run_id');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("ALTER TABLE charges ADD CONSTRAINT charges_kind_check CHECK (kind IN ('fee', 'usage'))");
  await knex.raw('ALTER TABLE charges ADD CONSTRAINT charges_days_check CHECK (from_date <= to_date AND period_from <= from_date AND to_date <= period_to)');
  // A fee's day is charged once: two runs of days of one item never start on the same day (writers also
  // hold the contract's row lock, under which overlaps are checked).
  await knex.raw("CREATE UNIQUE INDEX charges_fee_once ON charges (contract_plan_id, plan_item_id, from_date) WHERE kind = 'fee'");
  await knex.raw('CREATE INDEX charges_item_idx ON charges (contract_plan_id, plan_item_id, kind, from_date)');
  await knex.raw('CREATE INDEX charges_invoice_idx ON charges (invoice_id)');

  const periods = await knex('billed_periods as b')
    .join('contract_plans as cp', 'cp.id', 'b.contract_plan_id')
    .join('invoices as i', 'i.id', 'b.invoice_id')
    .join('billing_plan_items as p', 'p.id', 'b.plan_item_id')
    .select<
      Array<{ organisation_id: string; contract_id: string; contract_plan_id: string; plan_item_id: string; period_from: string; period_to: string; invoice_id: string; invoice_run_id: string | null; created_at: Date; currency: string; meter_id: string | null; pricing_model: string }>
    >('b.organisation_id', 'cp.contract_id', 'b.contract_plan_id', 'b.plan_item_id', knex.raw("to_char(b.period_from, 'YYYY-MM-DD') as period_from"), knex.raw("to_char(b.period_to, 'YYYY-MM-DD') as period_to"), 'b.invoice_id', 'b.invoice_run_id', 'b.created_at', 'i.currency', 'p.meter_id', 'p.pricing_model');
  let n = 0;
  for (const period of periods) {
    // The line that billed the period: its plan item, its days inside the period, no coupon or credit.
    const line = await knex('invoice_items')
      .where({ invoice_id: period.invoice_id, plan_item_id: period.plan_item_id })
      .whereNull('coupon_id')
      .whereNull('plan_change_id')
      .where('from_date', '>=', period.period_from)
      .where('to_date', '<=', period.period_to)
      .orderBy('from_date')
      .first<{ quantity: string; price: string; from_date: string; to_date: string } | undefined>('quantity', 'price', knex.raw("to_char(from_date, 'YYYY-MM-DD') as from_date"), knex.raw("to_char(to_date, 'YYYY-MM-DD') as to_date"));
    const amount = line ? roundToMinor(toDecimal(line.quantity).times(line.price), period.currency).toFixed(currencyMinorUnits(period.currency)) : '0';
    const usage = period.meter_id !== null;
    await knex('charges').insert({
      id: `chg_m${(n += 1).toString(36).padStart(10, '0')}${period.contract_plan_id.slice(-6)}`,
      organisation_id: period.organisation_id,
      contract_id: period.contract_id,
      contract_plan_id: period.contract_plan_id,
      plan_item_id: period.plan_item_id,
      kind: usage ? 'usage' : 'fee',
      from_date: line?.from_date ?? period.period_from,
      to_date: line?.to_date ?? period.period_to,
      period_from: period.period_from,
      period_to: period.period_to,
      // A per-unit line states its units; any other shows its amount once.
      quantity: usage && line && period.pricing_model === 'per_unit' ? line.quantity : null,
      amount,
      invoice_id: period.invoice_id,
      invoice_run_id: period.invoice_run_id,
      created_at: period.created_at,
    });
  }
  await knex.schema.dropTable('billed_periods');

  await knex.schema.alterTable('billing_plan_items', (table) => {
    // Null: in force from the first day of any contract plan; effective_to is the last day in force.
    table.date('effective_from');
    table.date('effective_to');
  });

  await knex.schema.createTable('billing_plan_periods', (table) => {
    table.text('plan_id').notNullable().references('billing_plans.id').onDelete('CASCADE');
    // Null: the plan's first billing period, in force from the start.
    table.date('effective_from');
    table.text('billing_period').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE UNIQUE INDEX billing_plan_periods_once ON billing_plan_periods (plan_id, effective_from) NULLS NOT DISTINCT');
  await knex.raw("ALTER TABLE billing_plan_periods ADD CONSTRAINT billing_plan_periods_kind_check CHECK (billing_period IN ('monthly', 'quarterly', 'yearly', 'one_time'))");
  await knex.raw('INSERT INTO billing_plan_periods (plan_id, effective_from, billing_period) SELECT id, NULL, billing_period FROM billing_plans');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_plan_periods');
  await knex.schema.alterTable('billing_plan_items', (table) => {
    table.dropColumn('effective_from');
    table.dropColumn('effective_to');
  });
  await knex.schema.createTable('billed_periods', (table) => {
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('contract_plan_id').notNullable().references('contract_plans.id').onDelete('CASCADE');
    table.text('plan_item_id').notNullable().references('billing_plan_items.id');
    table.date('period_from').notNullable();
    table.date('period_to').notNullable();
    table.text('invoice_id').notNullable().references('invoices.id').onDelete('CASCADE');
    table.text('invoice_run_id');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['contract_plan_id', 'plan_item_id', 'period_from']);
  });
  await knex.raw(
    "INSERT INTO billed_periods SELECT DISTINCT ON (contract_plan_id, plan_item_id, period_from) organisation_id, contract_plan_id, plan_item_id, period_from, period_to, invoice_id, invoice_run_id, created_at FROM charges ORDER BY contract_plan_id, plan_item_id, period_from, created_at",
  );
  await knex.schema.dropTable('charges');
}
