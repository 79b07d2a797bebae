import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { orNotFound } from '../../domain/errors';
import type { InvoiceState } from '../../domain/invoice-state';
import { Decimal, formatAmount, toDecimal } from '../../domain/money';
import { recogniseStraightLine } from '../../domain/revenue';
import type { Page, PageQuery } from '../../http/paging';
import { creditNotesIn } from '../credit-notes';
import { customersIn } from '../customers';
import { invoicesIn, type InvoiceRow } from '../invoices';
import { createRevenueRepository, type NewRevenueRecord, type RevenueRecord, type RevenueStatus } from './revenue.repository';
import type { RevenueSummary } from './revenue.schemas';

const STATUS_BY_INVOICE: Partial<Record<InvoiceState, RevenueStatus>> = {
  raised: 'recognised',
  sent: 'recognised',
  paid: 'collected',
  cancelled: 'reversed',
};

export type RevenueInvoice = Pick<InvoiceRow, 'id' | 'organisation_id' | 'currency' | 'date' | 'from_date' | 'to_date'>;

/**
 * Revenue is derived, never edited: the records of an invoice are recomputed from its items and its state
 * inside the transition's own transaction (`trx`), so a retry or an undo leaves exactly one consistent set.
 * A draft has none; a cancelled invoice keeps its records, marked reversed. `onlyItemId` limits the sync
 * to one item (POST /revenue/sync). What issued credit notes credit on an item is not recognised: an item
 * credited in full has no records. Returns the number of records written or marked.
 */
export async function syncInvoiceRevenue(trx: Knex, invoice: RevenueInvoice, state: InvoiceState, onlyItemId?: string): Promise<number> {
  const revenue = createRevenueRepository(trx);
  const scope = { invoiceId: invoice.id, invoiceItemId: onlyItemId };
  const status = STATUS_BY_INVOICE[state];
  if (!status) {
    await revenue.replace(scope, []);
    return 0;
  }
  if (state === 'cancelled') return revenue.setStatus(scope, status);
  const invoiceDate = calendarDay(invoice.date);
  const items = await invoicesIn(trx).items(invoice.id, onlyItemId);
  const credited = await creditNotesIn(trx).issuedNetByItem(invoice.id);
  const records: NewRevenueRecord[] = items.flatMap((item) => {
    const from = calendarDay(item.from_date ?? invoice.from_date ?? invoiceDate);
    const to = calendarDay(item.to_date ?? invoice.to_date ?? from);
    const amount = toDecimal(item.amount ?? '0').minus(credited.get(item.id) ?? '0');
    if (credited.has(item.id) && amount.isZero()) return [];
    return recogniseStraightLine(amount.toFixed(), invoice.currency, from, to).map((slice) => ({
      organisation_id: invoice.organisation_id,
      invoice_id: invoice.id,
      invoice_item_id: item.id,
      period: slice.month,
      days: slice.days,
      amount: slice.amount,
      currency: invoice.currency,
      status,
    }));
  });
  await revenue.replace(scope, records);
  return records.length;
}

export interface SyncItemRevenueInput {
  organisationId: string;
  invoiceItemId: string;
}

export function createRevenueService(db: Knex) {
  return {
    async list(organisationId: string, filter: { invoiceId?: string }, paging: PageQuery): Promise<Page<RevenueRecord>> {
      return createRevenueRepository(db).list(organisationId, filter, paging);
    },

    /**
     * Revenue of the months from `from`'s through `to`, per currency, with the customers that brought the
     * most: what GET /revenue lists, summed (records recognised or collected, not reversed).
     */
    async summary(organisationId: string, query: { from: string; to: string; top: number }): Promise<RevenueSummary> {
      const fromMonth = `${query.from.slice(0, 7)}-01`;
      // Revenue is recognised by month: whole months count, `to`'s included.
      const toMonthEnd = new Date(`${query.to.slice(0, 7)}-01T00:00:00Z`);
      toMonthEnd.setUTCMonth(toMonthEnd.getUTCMonth() + 1, 0);
      const rows = await createRevenueRepository(db).totalsByInvoice(organisationId, fromMonth, query.to);
      const customerOf = await invoicesIn(db).customersOf(organisationId, [...new Set(rows.map((row) => row.invoice_id))]);
      const byCurrency = new Map<string, { amount: Decimal; customers: Map<string, Decimal> }>();
      for (const row of rows) {
        const entry = byCurrency.get(row.currency) ?? { amount: new Decimal(0), customers: new Map<string, Decimal>() };
        entry.amount = entry.amount.plus(row.amount);
        const customerId = customerOf.get(row.invoice_id);
        if (customerId) entry.customers.set(customerId, (entry.customers.get(customerId) ?? new Decimal(0)).plus(row.amount));
        byCurrency.set(row.currency, entry);
      }
      const customers = customersIn(db);
      const currencies = [];
      for (const [currency, entry] of [...byCurrency].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const ranked = [...entry.customers].sort(([idA, a], [idB, b]) => b.comparedTo(a) || (idA < idB ? -1 : 1)).slice(0, query.top);
        const topCustomers = [];
        for (const [customerId, amount] of ranked) {
          const customer = await customers.findAnyById(organisationId, customerId);
          topCustomers.push({ customerId, name: customer?.name ?? customerId, amount: formatAmount(amount, currency) });
        }
        currencies.push({ currency, amount: formatAmount(entry.amount, currency), topCustomers });
      }
      return { from: fromMonth, to: toMonthEnd.toISOString().slice(0, 10), currencies };
    },

    /** Recomputes one item's revenue records from its invoice's current state, under the invoice's row lock. */
    async syncItem(input: SyncItemRevenueInput): Promise<{ records: number }> {
      return db.transaction(async (trx) => {
        const invoices = invoicesIn(trx);
        const item = orNotFound(await invoices.findItem(input.organisationId, input.invoiceItemId), 'Invoice item');
        const invoice = orNotFound(await invoices.lock(input.organisationId, item.invoice_id), 'Invoice');
        return { records: await syncInvoiceRevenue(trx, invoice, invoice.status, input.invoiceItemId) };
      });
    },
  };
}

export type RevenueService = ReturnType<typeof createRevenueService>;
