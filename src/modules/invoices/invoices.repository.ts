import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { bulkInsert } from '../../db/bulk';
import { newId } from '../../db/ids';
import { AppError } from '../../domain/errors';
import type { InvoiceCreated } from '../../domain/events';
import { numericProblem } from '../../domain/storable';
import { recordEvents } from '../../events/outbox';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { InvoiceState, InvoiceStep } from '../../domain/invoice-state';
import { Decimal, formatAmount, formatExact, toDecimal } from '../../domain/money';
import { draftFigures, type DraftFigures } from './invoice-pricing';

export interface InvoiceRow {
  id: string;
  organisation_id: string;
  customer_id: string | null;
  contract_id: string | null;
  contract_plan_id: string | null;
  status: InvoiceState;
  number: string | null;
  /** The gapless counter value behind `number`, kept so that a re-raise keeps its number. */
  number_sequence: number | null;
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
  /** The customer's credit consumed when the invoice was raised. */
  credits_applied: string;
  /** Issued credit notes that lowered what the unpaid invoice owed. */
  credited_due: string;
  /** What a total below zero put on the customer's credit balance when the invoice was raised. */
  credited_to_balance: string;
  paid_date: Date | null;
  /** The invoice date plus the payment terms, fixed when the invoice is raised; null while a draft. */
  due_date: Date | null;
  /** The invoice run that made the invoice, if one did. */
  invoice_run_id: string | null;
  /** The customer's own reference for the invoice, printed on it. */
  customer_reference: string | null;
  /** The customer's purchase order the invoice bills, printed on it. */
  purchase_order_number: string | null;
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
  /** Set on a discount line: the coupon that gave it. */
  coupon_id: string | null;
  /** Set on a credit line for a plan change: the change it credits. */
  plan_change_id: string | null;
  /** Set on a line of an item priced per dimension value: the values it charges for. */
  dimensions: Record<string, string | null> | null;
  created_at: Date;
  updated_at: Date;
}

const day = (value: Date | null) => (value ? calendarDay(value) : null);

const money = (value: string | null, currency: string | null) => (value === null || currency === null ? null : formatAmount(value, currency));

export function toInvoiceItem(row: InvoiceItemRow, currency: string) {
  return {
    id: row.id,
    planItemId: row.plan_item_id,
    title: row.title,
    description: row.description,
    quantity: formatExact(row.quantity),
    price: formatExact(row.price),
    amount: money(row.amount, currency),
    fromDate: day(row.from_date),
    toDate: day(row.to_date),
    couponId: row.coupon_id,
    planChangeId: row.plan_change_id,
    dimensions: row.dimensions ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * What a raised or sent invoice leaves owing: its total (what a total below zero put on the credit balance
 * brings it to zero) less the customer's credit and the credit notes that lowered it; nothing once paid;
 * none while a draft or cancelled.
 */
export function amountDue(row: Pick<InvoiceRow, 'status' | 'total' | 'credits_applied' | 'credited_due' | 'credited_to_balance'>): string | null {
  if (row.status === 'paid') return '0';
  if ((row.status !== 'raised' && row.status !== 'sent') || row.total === null) return null;
  return new Decimal(row.total).plus(row.credited_to_balance).minus(row.credits_applied).minus(row.credited_due).toFixed();
}

/**
 * The invoice as the API shows it. A draft, whose money is fixed only when it is raised, shows the figures
 * its raise would fix now (`draft`, computed by the raise's own code) instead of the empty columns.
 */
export function toInvoice(row: InvoiceRow, items: InvoiceItemRow[], draft?: DraftFigures) {
  const figures = row.status === 'draft' && draft ? draft : undefined;
  return {
    id: row.id,
    number: row.number,
    date: calendarDay(row.date),
    fromDate: day(row.from_date),
    toDate: day(row.to_date),
    status: row.status,
    // A draft's data shows the tax lines its raise would record now, as its figures do.
    data: figures ? { ...row.data, taxes: figures.taxes } : row.data,
    currency: row.currency,
    subtotal: figures ? figures.subtotal : money(row.subtotal, row.currency),
    taxTotal: figures ? figures.taxTotal : money(row.tax_total, row.currency),
    total: figures ? figures.total : money(row.total, row.currency),
    baseCurrency: figures ? figures.baseCurrency : row.base_currency,
    fxRate: figures ? figures.fxRate && formatExact(figures.fxRate) : row.fx_rate === null ? null : formatExact(row.fx_rate),
    baseTotal: figures ? figures.baseTotal : money(row.base_total, row.base_currency),
    creditsApplied: formatAmount(row.credits_applied, row.currency),
    creditedToBalance: formatAmount(row.credited_to_balance, row.currency),
    amountDue: money(amountDue(row), row.currency),
    // The day it was paid, while it is: a paid invoice cancelled has its payment reversed and was not paid.
    paidDate: row.status === 'paid' ? day(row.paid_date) : null,
    dueDate: day(row.due_date),
    comments: row.comments,
    customerId: row.customer_id,
    contractId: row.contract_id,
    invoiceRunId: row.invoice_run_id,
    customerReference: row.customer_reference,
    purchaseOrderNumber: row.purchase_order_number,
    items: items.map((item) => toInvoiceItem(figures ? { ...item, amount: figures.amounts.get(item.id) ?? null } : item, row.currency)),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: row.deleted_at?.toISOString() ?? null,
    OrganisationId: row.organisation_id,
    ContractPlanId: row.contract_plan_id,
  };
}

export type Invoice = ReturnType<typeof toInvoice>;

export interface NewInvoiceItem {
  planItemId?: string;
  title: string;
  description?: string;
  quantity: string;
  price: string;
  fromDate?: string;
  toDate?: string;
  /** A discount line: the coupon that gave it. */
  couponId?: string;
  /** A credit line for a plan change: the change it credits. */
  planChangeId?: string;
  /** A line of an item priced per dimension value: the values it charges for. */
  dimensions?: Record<string, string | null>;
}

export interface NewInvoice {
  organisationId: string;
  customerId: string;
  contractId: string;
  contractPlanId: string;
  currency: string;
  date: string;
  fromDate?: string;
  toDate?: string;
  /** Free-form facts about where the invoice came from (a milestone's id). */
  data?: Record<string, unknown>;
  /** The invoice run that makes the invoice. */
  invoiceRunId?: string;
  customerReference?: string | null;
  purchaseOrderNumber?: string | null;
  items: NewInvoiceItem[];
}

export interface InvoiceFilter {
  status?: InvoiceState;
  customerId?: string;
  contractId?: string;
  contractPlanId?: string;
  invoiceRunId?: string;
  /** Only invoices that are (`is: true`) or are not overdue today, each in its customer's zone, else `zone` (the organisation's). */
  overdue?: { is: boolean; zone: string };
  /** Only invoices dated within these days, both included. */
  from?: string;
  to?: string;
}

/** Ageing buckets, by days past the due date. */
export const AGEING_BUCKETS = ['current', '1-30', '31-60', '61-90', '90+'] as const;
export type AgeingBucket = (typeof AGEING_BUCKETS)[number];

/** What is due in one currency and bucket: the sum of the invoices' totals. */
export interface AgeingRow {
  currency: string;
  bucket: AgeingBucket;
  amount: string;
  invoices: number;
}

export interface NewReminder {
  organisationId: string;
  invoiceId: string;
  daysAfterDue: number;
  sentTo: string[];
  messageId: string;
}

export interface TransitionRow {
  seq: number;
  step: InvoiceStep;
  from_state: InvoiceState;
  to_state: InvoiceState;
  data: {
    paymentId?: string;
    reversedPaymentId?: string;
    creditsApplied?: string;
    creditsReturned?: string;
    creditsReturnedEntryId?: string;
    /** Raise: what the total below zero put on the balance, and the entry that did. */
    creditedToBalance?: string;
    creditedToBalanceEntryId?: string;
    /** Cancel: that credit taken back from the balance. */
    creditTakenBack?: string;
  };
  undone_at: Date | null;
}

export interface NewTransition {
  organisationId: string;
  invoiceId: string;
  seq: number;
  step: InvoiceStep;
  from: InvoiceState;
  to: InvoiceState;
  data?: object;
}

/** The columns fixed at raise, as `computeInvoiceTotals` returns them. */
export interface InvoiceTotals {
  subtotal: string;
  tax_total: string;
  total: string;
  base_currency: string;
  fx_rate: string;
  base_total: string;
  /** JSON text of its taxes and parties: merged into the invoice's data (a milestone's id there stays). */
  data: string;
}

export type StepTimeColumn = 'raised_at' | 'sent_at' | 'paid_at' | 'cancelled_at';

/** What a lifecycle step writes: the status, the step's time (stamped now or cleared by its undo), and its own columns. */
export interface InvoiceStatusChange {
  status: InvoiceState;
  stamp?: StepTimeColumn;
  clear?: StepTimeColumn;
  number?: string;
  number_sequence?: number;
  totals?: InvoiceTotals;
  paid_date?: string | null;
  comments?: string;
  /** Merged into `data.delivery`. */
  delivery?: object;
  /** Sets the due date to the invoice date plus these days; null clears it. */
  due_in_days?: number | null;
}

/** Raised or sent: the invoice is owed. */
const OWED: InvoiceState[] = ['raised', 'sent'];
/** An owed invoice's `amountDue` above zero, in SQL: one its customer's credit or credit notes covered owes nothing. */
const STILL_OWES = 'total + credited_to_balance - credits_applied - credited_due > 0';

/** Gapless number series per organisation: invoices, and credit notes with their own. */
export type NumberSeries = 'default' | 'credit_note';

const itemOrder = [{ column: 'created_at' }, { column: 'id' }];

/**
 * Why a draft was made, from the facts it keeps of its origin: a progressive billing threshold (its
 * `data.progressiveBilling`), an invoice run, a milestone (`data.milestoneId`), else by hand.
 */
function creationReason(invoice: Pick<Invoice, 'data' | 'invoiceRunId'>): Omit<InvoiceCreated, 'id'> {
  const progressive = invoice.data.progressiveBilling as { thresholds?: string[] } | undefined;
  if (progressive?.thresholds?.length) return { reason: 'progressive_threshold', threshold: progressive.thresholds.at(-1)!, thresholds: progressive.thresholds };
  if (invoice.invoiceRunId) return { reason: 'invoice_run' };
  return { reason: invoice.data.milestoneId ? 'milestone' : 'manual' };
}

/** The outbox write of new drafts, in their transaction: `invoice.created` with each invoice as the API shows it, and why it was made. */
async function emitCreated(trx: Knex, organisationId: string, invoiceIds: string[]): Promise<void> {
  if (invoiceIds.length === 0) return;
  const invoices = await createInvoiceRepository(trx).findMany(organisationId, invoiceIds);
  await recordEvents(trx, organisationId, 'invoice.created', invoices.map((invoice) => ({ ...invoice, ...creationReason(invoice) })));
}

/** A new draft's row, its data as a value (JSON text for a single insert). */
function draftRow(invoice: NewInvoice) {
  return {
    id: newId('inv'),
    organisation_id: invoice.organisationId,
    customer_id: invoice.customerId,
    contract_id: invoice.contractId,
    contract_plan_id: invoice.contractPlanId,
    currency: invoice.currency,
    date: invoice.date,
    from_date: invoice.fromDate ?? null,
    to_date: invoice.toDate ?? null,
    invoice_run_id: invoice.invoiceRunId ?? null,
    customer_reference: invoice.customerReference ?? null,
    purchase_order_number: invoice.purchaseOrderNumber ?? null,
    data: invoice.data ?? {},
  };
}

/** Why the item's quantity or price would not fit its column, if it would not: invoice_items.quantity is NUMERIC(40, 10) and price NUMERIC(30, 10) (migration 20261123000800). */
export function itemColumnProblem(item: Pick<NewInvoiceItem, 'title' | 'quantity' | 'price'>): string | undefined {
  const problems = [
    ['quantity', numericProblem(item.quantity, 40, 10)],
    ['price', numericProblem(item.price, 30, 10)],
  ].filter((entry): entry is [string, string] => entry[1] !== undefined);
  return problems.length > 0 ? problems.map(([field, problem]) => `${item.title}: ${field} ${item[field as 'quantity' | 'price']} ${problem}`).join('; ') : undefined;
}

function checkStorable(item: NewInvoiceItem): void {
  const problem = itemColumnProblem(item);
  if (problem) throw AppError.validation(problem);
}

function itemRow(organisationId: string, invoiceId: string, item: NewInvoiceItem) {
  checkStorable(item);
  return {
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
    coupon_id: item.couponId ?? null,
    plan_change_id: item.planChangeId ?? null,
    // An object: the single insert serialises it as JSON, and the bulk insert takes it as the jsonb value.
    dimensions: item.dimensions ?? null,
  };
}

const INVOICE_COLUMNS = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['customer_id', 'text'],
  ['contract_id', 'text'],
  ['contract_plan_id', 'text'],
  ['currency', 'text'],
  ['date', 'date'],
  ['from_date', 'date'],
  ['to_date', 'date'],
  ['invoice_run_id', 'text'],
  ['customer_reference', 'text'],
  ['purchase_order_number', 'text'],
  ['data', 'jsonb'],
] as const;

const ITEM_COLUMNS = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['invoice_id', 'text'],
  ['plan_item_id', 'text'],
  ['title', 'text'],
  ['description', 'text'],
  ['quantity', 'numeric'],
  ['price', 'numeric'],
  ['from_date', 'date'],
  ['to_date', 'date'],
  ['coupon_id', 'text'],
  ['plan_change_id', 'text'],
  ['dimensions', 'jsonb'],
] as const;

/** Invoices, their items, transitions and number counters. `db` may be a transaction. */
export function createInvoiceRepository(db: Knex) {
  /**
   * Today for an invoice row, in its customer's time zone, else in `zone` (the organisation's): an invoice
   * is overdue by the day where its customer is, whichever filter lists it.
   */
  const todayOfInvoice = (zone: string) =>
    db.raw(
      `(now() AT TIME ZONE COALESCE((SELECT customers.timezone FROM customers WHERE customers.organisation_id = invoices.organisation_id AND customers.id = invoices.customer_id), ?))::date`,
      [zone],
    );

  const live = (organisationId: string, id: string) => db<InvoiceRow>('invoices').where({ organisation_id: organisationId, id }).whereNull('deleted_at');
  const transition = (invoiceId: string, seq: number) => db('invoice_transitions').where({ invoice_id: invoiceId, seq });

  async function itemsOf(invoiceIds: string[]): Promise<Map<string, InvoiceItemRow[]>> {
    const rows = invoiceIds.length ? ((await db('invoice_items').whereIn('invoice_id', invoiceIds).orderBy(itemOrder)) as InvoiceItemRow[]) : [];
    const byInvoice = new Map<string, InvoiceItemRow[]>();
    for (const row of rows) byInvoice.set(row.invoice_id, [...(byInvoice.get(row.invoice_id) ?? []), row]);
    return byInvoice;
  }

  /** The rows as the API shows them, in their order: with their items, and each draft with its figures. */
  async function views(rows: InvoiceRow[]): Promise<Invoice[]> {
    const items = await itemsOf(rows.map((row) => row.id));
    const drafts = rows.filter((row) => row.status === 'draft').map((row) => ({ ...row, items: items.get(row.id) ?? [] }));
    const figures = await draftFigures(db, drafts);
    return rows.map((row) => toInvoice(row, items.get(row.id) ?? [], figures.get(row.id)));
  }

  return {
    /** Invoices not deleted, by status, over every organisation: the operators' metrics. */
    async countByStatus(): Promise<{ status: string; count: number }[]> {
      return db('invoices').whereNull('deleted_at').groupBy('status').select<{ status: string; count: number }[]>('status', db.raw('count(*)::int AS count'));
    },

    /** The invoice and its items in one transaction (a savepoint when `db` is already one). */
    async create(invoice: NewInvoice): Promise<InvoiceRow> {
      return db.transaction(async (trx) => {
        const draft = draftRow(invoice);
        const [row] = await trx('invoices')
          .insert({ ...draft, data: JSON.stringify(draft.data) })
          .returning<InvoiceRow[]>('*');
        if (invoice.items.length > 0) await trx('invoice_items').insert(invoice.items.map((item) => itemRow(invoice.organisationId, row!.id, item)));
        await emitCreated(trx, invoice.organisationId, [row!.id]);
        return row!;
      });
    },

    /**
     * Drafts with their items, in one multi-row insert each (inside the caller's transaction, when there is
     * one): what `create` does for each, for an invoice run's page of contracts. Answers the ids in order.
     */
    async createMany(invoices: NewInvoice[]): Promise<string[]> {
      if (invoices.length === 0) return [];
      const rows = invoices.map(draftRow);
      const items = invoices.flatMap((invoice, index) => invoice.items.map((item) => itemRow(invoice.organisationId, rows[index]!.id, item)));
      await db.transaction(async (trx) => {
        await bulkInsert(trx, 'invoices', INVOICE_COLUMNS, rows);
        await bulkInsert(trx, 'invoice_items', ITEM_COLUMNS, items);
        for (const organisationId of new Set(invoices.map((invoice) => invoice.organisationId))) {
          await emitCreated(trx, organisationId, rows.filter((row) => row.organisation_id === organisationId).map((row) => row.id));
        }
      });
      return rows.map((row) => row.id);
    },

    async findRow(organisationId: string, id: string): Promise<InvoiceRow | undefined> {
      return live(organisationId, id).first();
    },

    async findMany(organisationId: string, ids: string[]): Promise<Invoice[]> {
      return views(await db<InvoiceRow>('invoices').where({ organisation_id: organisationId }).whereIn('id', ids).whereNull('deleted_at'));
    },

    async find(organisationId: string, id: string): Promise<Invoice | undefined> {
      const row = await this.findRow(organisationId, id);
      if (!row) return undefined;
      return (await views([row]))[0];
    },

    async list(organisationId: string, filter: InvoiceFilter, paging: PageQuery): Promise<Page<Invoice>> {
      const query = db('invoices').where({ organisation_id: organisationId }).whereNull('deleted_at').select('*');
      if (filter.status) query.where('status', filter.status);
      if (filter.customerId) query.where('customer_id', filter.customerId);
      if (filter.contractId) query.where('contract_id', filter.contractId);
      if (filter.contractPlanId) query.where('contract_plan_id', filter.contractPlanId);
      if (filter.invoiceRunId) query.where('invoice_run_id', filter.invoiceRunId);
      if (filter.from) query.where('date', '>=', filter.from);
      if (filter.to) query.where('date', '<=', filter.to);
      if (filter.overdue) {
        const { is, zone } = filter.overdue;
        const overdue = (where: Knex.QueryBuilder) => where.whereIn('status', OWED).whereRaw(STILL_OWES).whereNotNull('due_date').where('due_date', '<', todayOfInvoice(zone));
        if (is) query.where(overdue);
        else query.whereNot(overdue);
      }
      const page = await paginate<InvoiceRow, InvoiceRow>(query, paging, { searchColumns: ['number', 'comments', 'customer_reference', 'purchase_order_number'], map: (row) => row });
      return { ...page, items: await views(page.items) };
    },

    /** Inside a transaction: the live invoice under its row lock until commit. */
    async lock(organisationId: string, id: string): Promise<InvoiceRow | undefined> {
      return live(organisationId, id).forUpdate().first();
    },

    /** A draft's references (null clears one); undefined when the invoice is not a live draft. */
    async setDraftReferences(organisationId: string, id: string, changes: { customer_reference?: string | null; purchase_order_number?: string | null }): Promise<InvoiceRow | undefined> {
      const [row] = await live(organisationId, id)
        .where({ status: 'draft' })
        .update({ ...Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)), updated_at: db.fn.now() })
        .returning<InvoiceRow[]>('*');
      return row;
    },

    /** The customer's credit consumed by the raise (0 when it is returned). */
    async setCreditsApplied(id: string, amount: string): Promise<void> {
      await db('invoices').where({ id }).update({ credits_applied: amount, updated_at: db.fn.now() });
    },

    /** What the invoice's total below zero put on the customer's credit balance (0 when it is taken back). */
    async setCreditedToBalance(id: string, amount: string): Promise<void> {
      await db('invoices').where({ id }).update({ credited_to_balance: amount, updated_at: db.fn.now() });
    },

    /** A credit note lowered (or, voided, stopped lowering) what the unpaid invoice owes. */
    async addCreditedDue(id: string, delta: string): Promise<void> {
      await db('invoices')
        .where({ id })
        .update({ credited_due: db.raw('credited_due + ?', [delta]), updated_at: db.fn.now() });
    },

    /** A lifecycle step's columns; the caller keeps the invoice's revenue in step with the new status. */
    async setStatus(id: string, change: InvoiceStatusChange): Promise<void> {
      const { status, stamp, clear, totals, delivery, due_in_days: dueInDays, ...columns } = change;
      await db('invoices')
        .where({ id })
        .update({
          status,
          ...columns,
          ...(totals ? { ...totals, data: db.raw('data || ?::jsonb', [totals.data]) } : {}),
          ...(stamp ? { [stamp]: db.fn.now() } : {}),
          ...(clear ? { [clear]: null } : {}),
          ...(delivery ? { data: db.raw("data || jsonb_build_object('delivery', ?::jsonb)", [JSON.stringify(delivery)]) } : {}),
          ...(dueInDays === undefined ? {} : { due_date: dueInDays === null ? null : db.raw('date + ?::integer', [dueInDays]) }),
          updated_at: db.fn.now(),
        });
    },

    /**
     * Gapless: the counter row stays locked until the caller's transaction ends, so a rolled-back raise (or
     * credit note issue) takes no number. `default` is the invoices' series.
     */
    async takeNextNumber(organisationId: string, series: NumberSeries = 'default'): Promise<number> {
      await db('invoice_number_counters').insert({ organisation_id: organisationId, series, last_number: 0 }).onConflict(['organisation_id', 'series']).ignore();
      const [row] = await db('invoice_number_counters')
        .where({ organisation_id: organisationId, series })
        .increment('last_number', 1)
        .returning<{ last_number: number }[]>('last_number');
      return row!.last_number;
    },

    /** Every transition of the invoice in order, undone ones included: what its workflow's state is built from. */
    async transitions(invoiceId: string): Promise<TransitionRow[]> {
      return db('invoice_transitions').where({ invoice_id: invoiceId }).orderBy('seq').select<TransitionRow[]>('seq', 'step', 'from_state', 'to_state', 'data', 'undone_at');
    },

    async findTransition(invoiceId: string, seq: number): Promise<TransitionRow | undefined> {
      return transition(invoiceId, seq).first<TransitionRow | undefined>();
    },

    async recordTransition(step: NewTransition): Promise<void> {
      await db('invoice_transitions').insert({
        id: newId('itr'),
        organisation_id: step.organisationId,
        invoice_id: step.invoiceId,
        seq: step.seq,
        step: step.step,
        from_state: step.from,
        to_state: step.to,
        data: JSON.stringify(step.data ?? {}),
      });
    },

    async markTransitionUndone(invoiceId: string, seq: number): Promise<void> {
      await transition(invoiceId, seq).update({ undone_at: db.fn.now() });
    },

    /**
     * What the organisation is owed on the calendar day `on`, by currency and ageing bucket: what its raised
     * and sent invoices still owe (total less the customer's credit applied and the credit notes that
     * lowered it); invoices that owe nothing are left out. Not yet due (or due that day) is `current`.
     */
    async ageing(organisationId: string, zone: string, customerId?: string): Promise<AgeingRow[]> {
      const overdueDays = db.raw('(? - due_date)', [todayOfInvoice(zone)]);
      return db('invoices')
        .where({ organisation_id: organisationId, ...(customerId ? { customer_id: customerId } : {}) })
        .whereNull('deleted_at')
        .whereIn('status', OWED)
        .whereRaw(STILL_OWES)
        .groupBy('currency', 'bucket')
        .orderBy(['currency', 'bucket'])
        .select<AgeingRow[]>(
          'currency',
          db.raw(
            `CASE WHEN due_date IS NULL OR ${overdueDays} <= 0 THEN 'current' WHEN ${overdueDays} <= 30 THEN '1-30' WHEN ${overdueDays} <= 60 THEN '31-60' WHEN ${overdueDays} <= 90 THEN '61-90' ELSE '90+' END AS bucket`,
          ),
          db.raw('sum(total + credited_to_balance - credits_applied - credited_due)::text AS amount'),
          db.raw('count(*)::int AS invoices'),
        );
    },

    /** The days after the due date of the reminders already sent for an invoice, ascending. */
    async reminderDays(invoiceId: string): Promise<number[]> {
      const rows = await db('invoice_reminders').where({ invoice_id: invoiceId }).orderBy('days_after_due').select<{ days_after_due: number }[]>('days_after_due');
      return rows.map((row) => row.days_after_due);
    },

    /** Records a reminder as sent; false when it already was (a retried activity). */
    async recordReminder(reminder: NewReminder): Promise<boolean> {
      const inserted = await db('invoice_reminders')
        .insert({
          id: newId('rem'),
          organisation_id: reminder.organisationId,
          invoice_id: reminder.invoiceId,
          days_after_due: reminder.daysAfterDue,
          sent_to: JSON.stringify(reminder.sentTo),
          message_id: reminder.messageId,
        })
        .onConflict(['invoice_id', 'days_after_due'])
        .ignore()
        .returning('id');
      return inserted.length > 0;
    },

    /** All of an invoice's items, or only `onlyItemId`. */
    async items(invoiceId: string, onlyItemId?: string): Promise<InvoiceItemRow[]> {
      return db('invoice_items').where({ invoice_id: invoiceId, ...(onlyItemId ? { id: onlyItemId } : {}) }).orderBy(itemOrder);
    },

    /** The invoices among `ids` that were cancelled: what their charges charged, the customer does not owe. */
    async cancelledAmong(ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await db('invoices').whereRaw('id = ANY(?)', [[...ids]]).where({ status: 'cancelled' }).select<Array<{ id: string }>>('id');
      return new Set(rows.map((row) => row.id));
    },

    /** The invoices among `ids` that progressive billing made (`data.progressiveBilling`). */
    async progressiveAmong(ids: readonly string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await db('invoices').whereRaw('id = ANY(?)', [[...ids]]).whereRaw("jsonb_typeof(data -> 'progressiveBilling') = 'object'").select<Array<{ id: string }>>('id');
      return new Set(rows.map((row) => row.id));
    },

    /** The coupon discount lines of the invoices among `ids`. */
    async couponLinesAmong(ids: readonly string[]): Promise<InvoiceItemRow[]> {
      if (ids.length === 0) return [];
      return db('invoice_items').whereRaw('invoice_id = ANY(?)', [[...ids]]).whereNotNull('coupon_id');
    },

    /** The items among `ids`, of any invoice. */
    async itemsByIds(ids: readonly string[]): Promise<InvoiceItemRow[]> {
      if (ids.length === 0) return [];
      return db('invoice_items').whereRaw('id = ANY(?)', [[...ids]]);
    },

    async listItems(organisationId: string, invoiceId: string): Promise<InvoiceItemRow[]> {
      return db('invoice_items').where({ organisation_id: organisationId, invoice_id: invoiceId }).orderBy(itemOrder);
    },

    async findItem(organisationId: string, id: string, invoiceId?: string): Promise<InvoiceItemRow | undefined> {
      return db('invoice_items').where({ organisation_id: organisationId, id, ...(invoiceId ? { invoice_id: invoiceId } : {}) }).first();
    },

    /** The customer of each of the organisation's invoices among `ids`. */
    async customersOf(organisationId: string, ids: string[]): Promise<Map<string, string | null>> {
      const customers = new Map<string, string | null>();
      // In slices, well below Postgres's 65,535 parameters a statement.
      for (let i = 0; i < ids.length; i += 10_000) {
        const rows = await db<InvoiceRow>('invoices').where({ organisation_id: organisationId }).whereIn('id', ids.slice(i, i + 10_000)).select('id', 'customer_id');
        for (const row of rows) customers.set(row.id, row.customer_id);
      }
      return customers;
    },

    /** Whether any invoice, live or deleted, bills the contract plan. */
    async anyForContractPlan(contractPlanId: string): Promise<boolean> {
      return Boolean(await db('invoices').where({ contract_plan_id: contractPlanId }).first('id'));
    },

    async insertItem(organisationId: string, invoiceId: string, item: NewInvoiceItem): Promise<InvoiceItemRow> {
      const [row] = await db('invoice_items').insert(itemRow(organisationId, invoiceId, item)).returning<InvoiceItemRow[]>('*');
      return row!;
    },

    async deleteItem(id: string): Promise<void> {
      await db('invoice_items').where({ id }).delete();
    },

    /** A discount line's amount (positive: what it takes off), as its price and amount of its one unit. */
    async setDiscount(id: string, amount: string): Promise<void> {
      const negated = toDecimal(amount).negated().toFixed();
      await db('invoice_items').where({ id }).update({ price: negated, amount: negated, updated_at: db.fn.now() });
    },

    async setItemAmount(id: string, amount: string): Promise<void> {
      await db('invoice_items').where({ id }).update({ amount, updated_at: db.fn.now() });
    },

    /** Hand-added items (no plan item), coupon discounts and plan-change credits are kept; the plan-derived ones are replaced by `items`. */
    async replacePlanItems(organisationId: string, invoiceId: string, items: NewInvoiceItem[]): Promise<void> {
      await db('invoice_items').where({ invoice_id: invoiceId }).whereNotNull('plan_item_id').whereNull('coupon_id').whereNull('plan_change_id').delete();
      if (items.length) await db('invoice_items').insert(items.map((item) => itemRow(organisationId, invoiceId, item)));
    },
  };
}

export type InvoiceRepository = ReturnType<typeof createInvoiceRepository>;
