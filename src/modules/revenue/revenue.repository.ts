import type { Knex } from 'knex';
import { bulkInsert, type BulkColumn } from '../../db/bulk';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import { formatAmount } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type RevenueStatus = 'recognised' | 'collected' | 'reversed';

export interface RevenueRow {
  id: string;
  organisation_id: string;
  invoice_id: string;
  invoice_item_id: string;
  /** The first day of the month. */
  period: Date;
  days: number;
  amount: string;
  currency: string;
  status: RevenueStatus;
  created_at: Date;
  updated_at: Date;
}

export type NewRevenueRecord = Omit<RevenueRow, 'id' | 'period' | 'created_at' | 'updated_at'> & { period: string };

const RECORD_COLUMNS: ReadonlyArray<BulkColumn<NewRevenueRecord & { id: string }>> = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['invoice_id', 'text'],
  ['invoice_item_id', 'text'],
  ['period', 'date'],
  ['days', 'integer'],
  ['amount', 'numeric'],
  ['currency', 'text'],
  ['status', 'text'],
];

export function toRevenue(row: RevenueRow) {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    invoiceItemId: row.invoice_item_id,
    period: calendarDay(row.period),
    days: row.days,
    amount: formatAmount(row.amount, row.currency),
    currency: row.currency,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export type RevenueRecord = ReturnType<typeof toRevenue>;

/** The revenue records of an invoice, or of one of its items. */
export interface RevenueScope {
  invoiceId: string;
  invoiceItemId?: string;
}

/** Revenue records, derived from invoices. `db` may be a transaction. */
export function createRevenueRepository(db: Knex) {
  const scoped = (scope: RevenueScope) =>
    db<RevenueRow>('revenue_records').where({ invoice_id: scope.invoiceId, ...(scope.invoiceItemId ? { invoice_item_id: scope.invoiceItemId } : {}) });

  return {
    async list(organisationId: string, filter: { invoiceId?: string }, paging: PageQuery): Promise<Page<RevenueRecord>> {
      const rows = db('revenue_records').where({ organisation_id: organisationId }).select('*');
      if (filter.invoiceId) rows.where({ invoice_id: filter.invoiceId });
      return paginate<RevenueRow, RevenueRecord>(rows, paging, {
        searchColumns: ['invoice_id', 'invoice_item_id', 'status', 'currency'],
        orderBy: [
          { column: 'period', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        map: toRevenue,
      });
    },

    /**
     * What counts as revenue (records recognised or collected, not reversed) of the months from `fromMonth`
     * (a month's first day) through `to`, per invoice and currency.
     */
    async totalsByInvoice(organisationId: string, fromMonth: string, to: string): Promise<Array<{ invoice_id: string; currency: string; amount: string }>> {
      return db('revenue_records')
        .where({ organisation_id: organisationId })
        .whereIn('status', ['recognised', 'collected'])
        .whereBetween('period', [fromMonth, to])
        .groupBy('invoice_id', 'currency')
        .select<Array<{ invoice_id: string; currency: string; amount: string }>>('invoice_id', 'currency', db.raw('sum(amount)::text AS amount'));
    },

    /**
     * Replaces the scope's records with `records`, in one statement however many there are (an item over
     * centuries has thousands of monthly records: as bind parameters, nine each, they passed the 65,535 one
     * statement may have).
     */
    async replace(scope: RevenueScope, records: NewRevenueRecord[]): Promise<void> {
      await scoped(scope).delete();
      await bulkInsert(db, 'revenue_records', RECORD_COLUMNS, records.map((record) => ({ id: newId('rev'), ...record })));
    },

    /** The number of records changed. */
    async setStatus(scope: RevenueScope, status: RevenueStatus): Promise<number> {
      return scoped(scope).update({ status, updated_at: db.fn.now() });
    },
  };
}

export type RevenueRepository = ReturnType<typeof createRevenueRepository>;
