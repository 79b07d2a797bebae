import type { Knex } from 'knex';
import { bulkInsert } from '../../db/bulk';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import type { Charge, ChargeLedger } from '../../domain/rating';
import { heldByCharge, type NotedLine } from '../../domain/usage-held';
import { paginate, type Page, type PageQuery } from '../../http/paging';

/** A charge as the ledger keeps it: what a line of an invoice charged for a plan item's days or usage window. */
export interface ChargeRow {
  id: string;
  contractId: string;
  contractPlanId: string;
  planItemId: string;
  kind: Charge['kind'];
  from: string;
  to: string;
  periodFrom: string;
  periodTo: string;
  quantity: string | null;
  amount: string;
  /** Its share of the discounts on its plan item. */
  discount: string;
  /** Its share of the invoice's taxes, once raised; null before. */
  tax: string | null;
  invoiceId: string;
  /** A usage charge of an item with prices per dimension value: the price entry it charged; null otherwise. */
  dimensionsKey: string | null;
}

const COLUMNS = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['contract_id', 'text'],
  ['contract_plan_id', 'text'],
  ['plan_item_id', 'text'],
  ['kind', 'text'],
  ['from_date', 'date'],
  ['to_date', 'date'],
  ['period_from', 'date'],
  ['period_to', 'date'],
  ['quantity', 'numeric'],
  ['amount', 'numeric'],
  ['discount', 'numeric'],
  ['invoice_id', 'text'],
  ['invoice_run_id', 'text'],
  ['dimensions_key', 'text'],
] as const;

interface Row {
  id: string;
  contract_id: string;
  contract_plan_id: string;
  plan_item_id: string;
  kind: Charge['kind'];
  from_date: Date;
  to_date: Date;
  period_from: Date;
  period_to: Date;
  quantity: string | null;
  amount: string;
  discount: string;
  tax: string | null;
  invoice_id: string;
  dimensions_key: string | null;
}

const toCharge = (row: Row): ChargeRow => ({
  id: row.id,
  contractId: row.contract_id,
  contractPlanId: row.contract_plan_id,
  planItemId: row.plan_item_id,
  kind: row.kind,
  from: calendarDay(row.from_date),
  to: calendarDay(row.to_date),
  periodFrom: calendarDay(row.period_from),
  periodTo: calendarDay(row.period_to),
  quantity: row.quantity,
  amount: row.amount,
  discount: row.discount,
  tax: row.tax,
  invoiceId: row.invoice_id,
  dimensionsKey: row.dimensions_key,
});

/**
 * The ledger of one contract plan, as the rating engine reads it: each usage charge with what it still holds
 * (less its discount share and what `noted`, the credit notes on its invoices' lines, gave back; nothing on
 * a `cancelled` invoice).
 */
export function ledgerOf(charges: readonly ChargeRow[], noted: readonly NotedLine[] = [], cancelled: ReadonlySet<string> = new Set()): ChargeLedger {
  const usage = charges.filter((charge) => charge.kind === 'usage');
  const held = heldByCharge(usage, noted, cancelled);
  return {
    fees: charges.filter((charge) => charge.kind === 'fee').map((charge) => ({ planItemId: charge.planItemId, from: charge.from, to: charge.to, amount: charge.amount })),
    usage: usage.map((charge, i) => ({
      planItemId: charge.planItemId,
      from: charge.from,
      to: charge.to,
      quantity: charge.quantity,
      amount: charge.amount,
      held: held[i]!.toFixed(),
      ...(charge.dimensionsKey === null ? {} : { dimensionsKey: charge.dimensionsKey }),
    })),
  };
}

/**
 * The charge ledger. Writers hold the contract's row lock, so that what they read of the ledger is still
 * true when they write; a fee's run of days is also unique by its first day.
 */
export function createChargeRepository(db: Knex) {
  return {
    /** Every charge of the contract plans, oldest first. */
    async of(contractPlanIds: readonly string[]): Promise<ChargeRow[]> {
      if (contractPlanIds.length === 0) return [];
      const rows = await db<Row>('charges').whereIn('contract_plan_id', contractPlanIds).orderBy([{ column: 'from_date' }, { column: 'created_at' }]);
      return rows.map(toCharge);
    },

    /** The charges an invoice made. */
    async ofInvoice(invoiceId: string): Promise<ChargeRow[]> {
      return (await db<Row>('charges').where({ invoice_id: invoiceId }).orderBy('from_date')).map(toCharge);
    },

    /**
     * Records the charges; answers how many were new. A fee run that starts on a day already charged is
     * not written again: the caller compares the count to know that nothing was charged twice.
     */
    async record(organisationId: string, invoiceRunId: string | null, charges: ReadonlyArray<Charge & { contractId: string; contractPlanId: string; invoiceId: string }>): Promise<number> {
      const rows = charges.map((charge) => ({
        id: newId('chg'),
        organisation_id: organisationId,
        contract_id: charge.contractId,
        contract_plan_id: charge.contractPlanId,
        plan_item_id: charge.planItemId,
        kind: charge.kind,
        from_date: charge.from,
        to_date: charge.to,
        period_from: charge.period.from,
        period_to: charge.period.to,
        quantity: charge.quantity,
        amount: charge.amount,
        discount: charge.discount ?? '0',
        invoice_id: charge.invoiceId,
        invoice_run_id: invoiceRunId,
        dimensions_key: charge.dimensionsKey ?? null,
      }));
      const written = await bulkInsert(db, 'charges', COLUMNS, rows, { onConflict: "(contract_plan_id, plan_item_id, from_date) WHERE kind = 'fee' DO NOTHING", returning: '1' });
      return written.length;
    },

    /** Each charge's share of its invoice's taxes, fixed when the invoice is raised. */
    async setTaxes(taxes: ReadonlyMap<string, string>): Promise<void> {
      if (taxes.size === 0) return;
      await db.raw('UPDATE charges AS c SET tax = t.tax FROM unnest(?::text[], ?::numeric[]) AS t(id, tax) WHERE c.id = t.id', [[...taxes.keys()], [...taxes.values()]]);
    },

    /** The contract's charges, newest first, a page at a time. */
    async page(contractId: string, paging: PageQuery): Promise<Page<ChargeRow>> {
      return paginate<Row, ChargeRow>(db('charges').where({ contract_id: contractId }).select('*'), paging, {
        searchColumns: ['plan_item_id', 'invoice_id'],
        orderBy: [
          { column: 'from_date', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        map: toCharge,
      });
    },

    /** A draft recomputed: what it charged is charged again from scratch. */
    async forgetInvoice(invoiceId: string): Promise<void> {
      await db('charges').where({ invoice_id: invoiceId }).delete();
    },

    /**
     * The first charge of any of the plan items, or of the contract plans, that covers a day on or after
     * `day`: what an edit effective from `day` would rewrite.
     */
    async firstChargedFrom(filter: { planItemIds?: readonly string[]; contractPlanIds?: readonly string[] }, day: string): Promise<ChargeRow | undefined> {
      const query = db<Row>('charges').where('to_date', '>=', day);
      if (filter.planItemIds) query.whereIn('plan_item_id', filter.planItemIds);
      if (filter.contractPlanIds) query.whereIn('contract_plan_id', filter.contractPlanIds);
      const row = await query.orderBy('to_date', 'desc').first();
      return row ? toCharge(row) : undefined;
    },

    /** The last day the contract's ledger has charged, of any of its plans; undefined when none. */
    async lastChargedDay(contractId: string): Promise<string | undefined> {
      // By its contract plans: the ledger's index leads with them.
      const plans = db('contract_plans').where('contract_id', contractId).select('id');
      const [row] = await db('charges').whereIn('contract_plan_id', plans).max<Array<{ last: Date | null }>>({ last: 'to_date' });
      return row?.last ? calendarDay(row.last) : undefined;
    },

    /** Whether any contract of the organisation was ever charged for usage: a window of days read in its zone. */
    async anyUsageOf(organisationId: string): Promise<boolean> {
      const plans = db('contract_plans').where('organisation_id', organisationId).select('id');
      return Boolean(await db('charges').whereIn('contract_plan_id', plans).where('kind', 'usage').first('id'));
    },

    /** Whether anything was ever charged for the plan items. */
    async anyFor(planItemIds: readonly string[]): Promise<boolean> {
      if (planItemIds.length === 0) return false;
      return Boolean(await db('charges').whereIn('plan_item_id', planItemIds).first('id'));
    },
  };
}

export type ChargeRepository = ReturnType<typeof createChargeRepository>;

/** How a charge is named in a refusal. */
export const describeCharge = (charge: ChargeRow) => `invoice ${charge.invoiceId} charged plan item ${charge.planItemId} for ${charge.from} to ${charge.to}`;
