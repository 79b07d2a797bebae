import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { InvoiceState } from '../../domain/invoice-state';
import { formatAmount, toDecimal } from '../../domain/money';

export interface InvoiceRow {
  id: string;
  organisation_id: string;
  customer_id: string | null;
  contract_id: string | null;
  contract_plan_id: string | null;
  status: InvoiceState;
  number: string | null;
  currency: string;
  date: Date;
  from_date: Date | null;
  to_date: Date | null;
  subtotal: string | null;
  tax_total: string | null;
  total: string | null;
  base_currency: string | null;
  fx_rate: string | null;
  base_total: string | null;
  paid_date: Date | null;
  comments: string | null;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface InvoiceItemRow {
  id: string;
  invoice_id: string;
  plan_item_id: string | null;
  title: string;
  description: string | null;
  quantity: string;
  price: string;
  amount: string | null;
  from_date: Date | null;
  to_date: Date | null;
  created_at: Date;
  updated_at: Date;
}

const day = (value: Date | null) => (value ? calendarDay(value) : null);

const money = (value: string | null, currency: string | null) => (value === null || currency === null ? null : formatAmount(value, currency));
/** NUMERIC(24,6) comes back as "2.500000"; the API shows "2.5". */
const plain = (value: string) => toDecimal(value).toFixed();

export function toInvoiceItem(row: InvoiceItemRow, currency: string) {
  return {
    id: row.id,
    planItemId: row.plan_item_id,
    title: row.title,
    description: row.description,
    quantity: plain(row.quantity),
    price: plain(row.price),
    amount: money(row.amount, currency),
    fromDate: day(row.from_date),
    toDate: day(row.to_date),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toInvoice(row: InvoiceRow, items: InvoiceItemRow[]) {
  return {
    id: row.id,
    number: row.number,
    date: calendarDay(row.date),
    fromDate: day(row.from_date),
    toDate: day(row.to_date),
    status: row.status,
    data: row.data,
    currency: row.currency,
    subtotal: money(row.subtotal, row.currency),
    taxTotal: money(row.tax_total, row.currency),
    total: money(row.total, row.currency),
    baseCurrency: row.base_currency,
    fxRate: row.fx_rate === null ? null : plain(row.fx_rate),
    baseTotal: money(row.base_total, row.base_currency),
    paidDate: day(row.paid_date),
    comments: row.comments,
    customerId: row.customer_id,
    contractId: row.contract_id,
    items: items.map((item) => toInvoiceItem(item, row.currency)),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: row.deleted_at?.toISOString() ?? null,
    OrganisationId: row.organisation_id,
    ContractPlanId: row.contract_plan_id,
  };
}

export type Invoice = ReturnType<typeof toInvoice>;

export interface NewInvoice {
  organisationId: string;
  customerId: string;
  contractId: string;
  contractPlanId: string;
  currency: string;
  date: string;
  fromDate?: string;
  toDate?: string;
  items: Array<{ planItemId?: string; title: string; description?: string; quantity: string; price: string; fromDate?: string; toDate?: string }>;
}

export function createInvoiceRepository(db: Knex) {
  async function itemsOf(invoiceIds: string[]): Promise<Map<string, InvoiceItemRow[]>> {
    const rows = invoiceIds.length
      ? await db('invoice_items').whereIn('invoice_id', invoiceIds).orderBy([{ column: 'created_at' }, { column: 'id' }]) as InvoiceItemRow[]
      : [];
    const byInvoice = new Map<string, InvoiceItemRow[]>();
    for (const row of rows) byInvoice.set(row.invoice_id, [...(byInvoice.get(row.invoice_id) ?? []), row]);
    return byInvoice;
  }

  return {
    async create(invoice: NewInvoice): Promise<InvoiceRow> {
      return db.transaction(async (trx) => {
        const [row] = await trx('invoices')
          .insert({
            id: newId('inv'),
            organisation_id: invoice.organisationId,
            customer_id: invoice.customerId,
            contract_id: invoice.contractId,
            contract_plan_id: invoice.contractPlanId,
            currency: invoice.currency,
            date: invoice.date,
            from_date: invoice.fromDate ?? null,
            to_date: invoice.toDate ?? null,
          })
          .returning<InvoiceRow[]>('*');
        if (invoice.items.length > 0) {
          await trx('invoice_items').insert(
            invoice.items.map((item) => ({
              id: newId('itm'),
              organisation_id: invoice.organisationId,
              invoice_id: row!.id,
              plan_item_id: item.planItemId ?? null,
              title: item.title,
              description: item.description ?? null,
              quantity: item.quantity,
              price: item.price,
              from_date: item.fromDate ?? null,
              to_date: item.toDate ?? null,
            })),
          );
        }
        return row!;
      });
    },

    async findRow(organisationId: string, id: string): Promise<InvoiceRow | undefined> {
      return db<InvoiceRow>('invoices').where({ organisation_id: organisationId, id }).whereNull('deleted_at').first();
    },

    async find(organisationId: string, id: string): Promise<Invoice | undefined> {
      const row = await this.findRow(organisationId, id);
      if (!row) return undefined;
      return toInvoice(row, (await itemsOf([row.id])).get(row.id) ?? []);
    },

    async list(organisationId: string, filter: { status?: string; customerId?: string; contractPlanId?: string }, paging: PageQuery): Promise<Page<Invoice>> {
      const query = db('invoices').where({ organisation_id: organisationId }).whereNull('deleted_at').select('*');
      if (filter.status) query.where('status', filter.status);
      if (filter.customerId) query.where('customer_id', filter.customerId);
      if (filter.contractPlanId) query.where('contract_plan_id', filter.contractPlanId);
      const page = await paginate<InvoiceRow, InvoiceRow>(query, paging, { searchColumns: ['number', 'comments'], map: (row) => row });
      const items = await itemsOf(page.items.map((row) => row.id));
      return { ...page, items: page.items.map((row) => toInvoice(row, items.get(row.id) ?? [])) };
    },

    async listItems(organisationId: string, invoiceId: string): Promise<InvoiceItemRow[]> {
      return db('invoice_items').where({ organisation_id: organisationId, invoice_id: invoiceId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
    },

    /** Items change only while the invoice is a draft: the row lock makes the check and the write one step. */
    async addItem(organisationId: string, invoiceId: string, item: NewInvoice['items'][number]): Promise<InvoiceItemRow | 'not_draft' | undefined> {
      return db.transaction(async (trx) => {
        const invoice = await trx<InvoiceRow>('invoices').where({ organisation_id: organisationId, id: invoiceId }).whereNull('deleted_at').forUpdate().first();
        if (!invoice) return undefined;
        if (invoice.status !== 'draft') return 'not_draft';
        const [row] = await trx('invoice_items')
          .insert({
            id: newId('itm'),
            organisation_id: organisationId,
            invoice_id: invoiceId,
            plan_item_id: item.planItemId ?? null,
            title: item.title,
            description: item.description ?? null,
            quantity: item.quantity,
            price: item.price,
            from_date: item.fromDate ?? null,
            to_date: item.toDate ?? null,
          })
          .returning<InvoiceItemRow[]>('*');
        return row;
      });
    },

    async deleteItem(organisationId: string, invoiceId: string, itemId: string): Promise<'deleted' | 'not_draft' | undefined> {
      return db.transaction(async (trx) => {
        const invoice = await trx<InvoiceRow>('invoices').where({ organisation_id: organisationId, id: invoiceId }).whereNull('deleted_at').forUpdate().first();
        if (!invoice) return undefined;
        const item = await trx('invoice_items').where({ organisation_id: organisationId, invoice_id: invoiceId, id: itemId }).first('id');
        if (!item) return undefined;
        if (invoice.status !== 'draft') return 'not_draft';
        await trx('invoice_items').where({ id: itemId }).delete();
        return 'deleted';
      });
    },
  };
}

export type InvoiceRepository = ReturnType<typeof createInvoiceRepository>;
