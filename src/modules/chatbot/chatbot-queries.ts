import { z } from 'zod';
import { AppError } from '../../domain/errors';
import { Decimal, formatAmount } from '../../domain/money';
import { isoCurrency, isoDate, reference } from '../../http/schemas';
import { roleAllows, type Action, type Role } from '../../http/permissions';
import type { CollectionsService } from '../collections';
import type { ContractService } from '../contracts';
import type { FxRateService } from '../fx-rates';
import type { InvoiceRunControlService } from '../invoice-runs';
import type { InvoiceService } from '../invoices';
import type { MeterService } from '../meters';
import type { PaymentService } from '../payments';
import type { RevenueService } from '../revenue';
import { mentioned, type Directory, type Named } from './mentions';

/**
 * The chatbot's read-only questions. Each one is answered by the services the API's own routes call, with
 * the caller's organisation and role, and names the API paths that give the same figures. No question
 * writes anything.
 */
export interface ChatbotReads {
  invoices: Pick<InvoiceService, 'list'>;
  collections: Pick<CollectionsService, 'ageing'>;
  revenue: Pick<RevenueService, 'summary'>;
  meters: Pick<MeterService, 'usage' | 'query'>;
  contracts: Pick<ContractService, 'requireContract'>;
  payments: Pick<PaymentService, 'list'>;
  fxRates: Pick<FxRateService, 'effective'>;
  invoiceRuns: Pick<InvoiceRunControlService, 'list' | 'view' | 'upcoming'>;
}

/** Who asks: the answer is computed in their organisation, with their role's permissions. */
export interface Asker {
  organisationId: string;
  role: Role;
  /** Today in the organisation's time zone: the day "this month", "overdue" and "days past due" are read from. */
  today: string;
}

/** An answer: its words, the figures behind them, and the API paths that give those figures. */
export interface ChatAnswer {
  text: string;
  data: object | null;
  sources: string[];
}

const day = isoDate;
const id = reference(200);
const period = { from: day.describe('first day'), to: day.describe('last day') };

/** An answer instead of the query's: a name that fits several, or none. */
class Unresolved extends Error {
  constructor(readonly answer: ChatAnswer) {
    super(answer.text);
  }
}

/** Finds what a question names: by id, by its name as written, else by a near-exact fuzzy match alone. */
export interface Finder {
  customer(value: string): Named;
  meter(value: string): Named;
  entity(value: string): Named & { customerId: string | null };
  contract(value: string): Named & { customerId: string };
}

/**
 * The answer to a name that fits several items, one only nearly, or (none) an id of that kind the
 * organisation does not have; `value`: the name as the question wrote it.
 */
export function candidatesReply(what: string, items: readonly Named[], value?: string): ChatAnswer {
  const candidates = items.map(({ id, name }) => ({ id, name }));
  const names = candidates.map((candidate) => candidate.name).join(', ');
  const asked = value === undefined ? '' : ` "${value}"`;
  // Nothing found answers as a name that names nothing does: no data to show.
  if (candidates.length === 0) return { text: `No ${what} of this organisation has the id${asked || ' the question gives'}.`, data: null, sources: [] };
  if (candidates.length === 1) return { text: `The nearest ${what} to${asked || ' the name in the question'} is ${names}. Is it the one you mean?`, data: { candidates }, sources: [] };
  return { text: `Several ${what}s fit${asked}: ${names}. Which one do you mean?`, data: { candidates }, sources: [] };
}

function finderOf(directory: Directory): Finder {
  const complete = directory.complete !== false;
  const candidatesOf = (what: string, value: string, items: readonly Named[]) => new Unresolved(candidatesReply(what, items, value));
  const find = <T extends Named>(items: readonly T[], what: string, value: string, extra?: (item: T) => string[]): T => {
    const byId = items.find((item) => item.id === value);
    if (byId) return byId;
    // Names need not be unique: two of the same name are candidates, never a pick.
    const sameName = items.filter((item) => item.name.toLowerCase() === value.trim().toLowerCase());
    if (sameName.length === 1) return sameName[0]!;
    if (sameName.length > 1) throw candidatesOf(what, value, sameName);
    const match = mentioned(value, items, true, extra, complete);
    if ('found' in match) return match.found;
    if ('ambiguous' in match) throw candidatesOf(what, value, match.ambiguous);
    throw new Unresolved({
      text: complete ? `No ${what} is named "${value}".` : `No ${what} named "${value}" is among the first 1,000 names read; ask with its exact name as written.`,
      data: null,
      sources: [],
    });
  };
  return {
    customer: (value) => find(directory.customers, 'customer', value),
    meter: (value) => find(directory.meters, 'meter', value, (item) => [item.metric.replace(/_/g, ' ')]),
    entity: (value) => find(directory.entities, 'entity', value),
    contract: (value) => find(directory.contracts, 'contract', value),
  };
}

const query = <I extends z.ZodObject>(definition: {
  name: string;
  description: string;
  input: I;
  actions: Action[];
  run: (reads: ChatbotReads, asker: Asker, input: z.output<I>, find: Finder) => Promise<ChatAnswer>;
}) => definition;

const named = (what: string) => z.string().min(1).max(200).describe(`the ${what}: its id, or its name`);

const path = (base: string, params: Record<string, string | undefined>) => {
  const search = new URLSearchParams(Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return search.size > 0 ? `${base}?${search.toString()}` : base;
};

const list = <T>(items: T[], describe: (item: T) => string) => (items.length === 0 ? 'none' : items.map(describe).join('; '));

/** Pages of a split read at most: a question is answered in words, and 10,000 rows are more than words can carry. */
const SPLIT_PAGES = 10;

/**
 * A meter's usage split by dimensions: the rows of GET /meters/{id}/query by calendar month in UTC (the
 * days the usage answer reads), every page of them, in words per month and group.
 */
async function usageSplit(reads: ChatbotReads, asker: Asker, meterId: string, ask: { entityId?: string; from: string; to: string; groupBy: string[] }) {
  const params = { from: ask.from, to: ask.to, windowSize: 'month' as const, groupBy: ask.groupBy, entityId: ask.entityId, timezone: 'UTC', filter: {}, limit: 1000 };
  const rows: Array<{ windowStart: string; groups: Record<string, string | null>; value: string | null }> = [];
  let total = 0;
  for (let page = 1; page <= SPLIT_PAGES; page += 1) {
    const answer = await reads.meters.query(asker.organisationId, meterId, { ...params, page });
    rows.push(...answer.rows);
    total = answer.total;
    if (rows.length >= total || answer.rows.length === 0) break;
  }
  const months = new Set(rows.map((row) => row.windowStart.slice(0, 7)));
  const describe = (row: (typeof rows)[number]) =>
    `${months.size > 1 ? `${row.windowStart.slice(0, 7)} ` : ''}${Object.entries(row.groups).map(([key, value]) => `${key} ${value ?? '(none)'}`).join(', ')}: ${row.value ?? 'no value'}`;
  const more = total > rows.length ? ` (the first ${rows.length} of ${total} groups)` : '';
  const text = `By ${ask.groupBy.join(' and ')}${more}: ${list(rows, describe)}.`;
  const search = new URLSearchParams({ from: ask.from, to: ask.to, windowSize: 'month', timezone: 'UTC' });
  for (const key of ask.groupBy) search.append('groupBy', key);
  if (ask.entityId) search.set('entityId', ask.entityId);
  return { text, rows, sources: [`/meters/${meterId}/query?${search.toString()}`] };
}

export const CHATBOT_QUERIES = [
  query({
    name: 'outstanding_amount',
    description: 'What one customer owes: the totals of its raised and sent invoices still due, per currency, aged by days past due',
    input: z.object({ customer: named('customer') }),
    actions: ['InvoiceService:getInvoices'],
    async run(reads, asker, input, find) {
      const customer = find.customer(input.customer);
      const ageing = await reads.collections.ageing(asker.organisationId, { customerId: customer.id });
      const who = customer.name;
      const text =
        ageing.currencies.length === 0
          ? `${who} owes nothing.`
          : `${who} owes ${list(ageing.currencies, (entry) => `${entry.total} ${entry.currency} on ${entry.invoices} invoice(s), ${entry.buckets.current} not yet due`)}.`;
      return { text, data: ageing, sources: [path('/collections', { customerId: customer.id })] };
    },
  }),
  query({
    name: 'overdue_invoices',
    description: 'The overdue invoices (raised or sent, due date passed), of all customers or one, with the days each is past due',
    input: z.object({ customer: named('customer').optional() }),
    actions: ['InvoiceService:getInvoices'],
    async run(reads, asker, input, find) {
      const customer = input.customer === undefined ? undefined : find.customer(input.customer);
      const page = await reads.invoices.list(asker.organisationId, { overdue: true, ...(customer ? { customerId: customer.id } : {}) }, { page: 1, limit: 100 });
      const today = Date.parse(asker.today);
      const rows = page.items.map((invoice) => ({
        id: invoice.id,
        number: invoice.number,
        customerId: invoice.customerId,
        currency: invoice.currency,
        amountDue: invoice.amountDue,
        dueDate: invoice.dueDate,
        daysOverdue: invoice.dueDate ? Math.round((today - Date.parse(invoice.dueDate)) / 86_400_000) : null,
      }));
      const scope = customer ? ` of ${customer.name}` : ' of all customers';
      const text = `${page.total} overdue invoice(s)${scope}: ${list(rows, (row) => `${row.number} ${row.amountDue} ${row.currency}, ${row.daysOverdue} days past due`)}.`;
      return { text, data: { total: page.total, invoices: rows }, sources: [path('/invoices', { overdue: 'true', customerId: customer?.id })] };
    },
  }),
  query({
    name: 'invoices_by_status',
    description: 'The invoices in one status (draft, raised, sent, paid, cancelled) dated within a period, of all customers or one, with their count and totals per currency',
    input: z.object({ status: z.enum(['draft', 'raised', 'sent', 'paid', 'cancelled']), ...period, customer: named('customer').optional() }),
    actions: ['InvoiceService:getInvoices'],
    async run(reads, asker, input, find) {
      const customer = input.customer === undefined ? undefined : find.customer(input.customer);
      const filter = { status: input.status, from: input.from, to: input.to, ...(customer ? { customerId: customer.id } : {}) };
      // Every page, so that the totals are of all the invoices; the rows shown are the first 100.
      const first = await reads.invoices.list(asker.organisationId, filter, { page: 1, limit: 100 });
      const invoices = [...first.items];
      for (let page = 2; invoices.length < first.total && page <= 100; page += 1) invoices.push(...(await reads.invoices.list(asker.organisationId, filter, { page, limit: 100 })).items);
      const totals = new Map<string, Decimal>();
      for (const invoice of invoices) if (invoice.total !== null) totals.set(invoice.currency, (totals.get(invoice.currency) ?? new Decimal(0)).plus(invoice.total));
      const byCurrency = [...totals].map(([currency, total]) => ({ currency, total: formatAmount(total, currency) }));
      const scope = customer ? ` of ${customer.name}` : '';
      const text = `${first.total} ${input.status} invoice(s)${scope} dated ${input.from} to ${input.to}${byCurrency.length ? `: ${list(byCurrency, (entry) => `${entry.total} ${entry.currency}`)}` : ''}.`;
      return {
        text,
        data: {
          total: first.total,
          totals: byCurrency,
          invoices: first.items.map((invoice) => ({ id: invoice.id, number: invoice.number, date: invoice.date, currency: invoice.currency, total: invoice.total })),
        },
        sources: [path('/invoices', { status: input.status, from: input.from, to: input.to, customerId: customer?.id })],
      };
    },
  }),
  query({
    name: 'revenue',
    description: 'Revenue of a period per currency (the months from the first day’s to the last day), recognised or collected, not reversed',
    input: z.object(period),
    actions: ['JobService:create', 'RevenueService:getRevenue'],
    async run(reads, asker, input) {
      const summary = await reads.revenue.summary(asker.organisationId, { from: input.from, to: input.to, top: 10 });
      const text = `Revenue from ${summary.from} to ${summary.to}: ${list(summary.currencies, (entry) => `${entry.amount} ${entry.currency}`)}.`;
      return {
        text,
        data: { from: summary.from, to: summary.to, currencies: summary.currencies.map(({ currency, amount }) => ({ currency, amount })) },
        sources: [path('/revenue/summary', { from: input.from, to: input.to })],
      };
    },
  }),
  query({
    name: 'top_customers',
    description: 'The customers that brought the most revenue in a period, per currency',
    input: z.object({ ...period, top: z.number().int().min(1).max(100).default(5) }),
    actions: ['JobService:create', 'RevenueService:getRevenue'],
    async run(reads, asker, input) {
      const summary = await reads.revenue.summary(asker.organisationId, { from: input.from, to: input.to, top: input.top });
      const text = `Top customers by revenue from ${summary.from} to ${summary.to}: ${list(summary.currencies, (entry) => `${entry.currency}: ${list(entry.topCustomers, (customer) => `${customer.name} ${customer.amount}`)}`)}.`;
      return { text, data: summary, sources: [path('/revenue/summary', { from: input.from, to: input.to, top: String(input.top) })] };
    },
  }),
  query({
    name: 'usage',
    description: "A meter's usage over a period, for one customer entity or all, and split by the meter's dimensions when asked",
    input: z.object({
      meter: named('meter'),
      entity: named('customer entity').optional(),
      ...period,
      groupBy: z.array(z.string().min(1).max(200)).min(1).max(5).optional().describe("dimensions of the meter (its groupBy keys) to split the usage by"),
    }),
    actions: ['MeterService:getMeters'],
    async run(reads, asker, input, find) {
      const meter = find.meter(input.meter);
      const entity = input.entity === undefined ? undefined : find.entity(input.entity);
      const from = `${input.from}T00:00:00.000Z`;
      const next = new Date(`${input.to}T00:00:00.000Z`);
      next.setUTCDate(next.getUTCDate() + 1);
      const to = next.toISOString();
      const usage = await reads.meters.usage(asker.organisationId, meter.id, { customerEntityId: entity?.id, from, to });
      const text = `${meter.name} from ${input.from} to ${input.to}${entity ? ` for ${entity.name}` : ' for all customers'}: ${String((usage as { value?: unknown }).value ?? 0)}.`;
      const sources = [path(`/meters/${meter.id}/usage`, { customerEntityId: entity?.id, from, to })];
      if (!input.groupBy) return { text, data: usage, sources };
      const split = await usageSplit(reads, asker, meter.id, { entityId: entity?.id, from, to, groupBy: input.groupBy });
      return { text: `${text} ${split.text}`, data: { ...usage, split: split.rows }, sources: [...sources, ...split.sources] };
    },
  }),
  query({
    name: 'contract_status',
    description: "A contract's status, plans and dates, and the invoices its next run would make (the upcoming invoice)",
    input: z.object({ contract: named('contract') }),
    actions: ['ContractService:getContractById'],
    async run(reads, asker, input, find) {
      const contractId = find.contract(input.contract).id;
      const contract = await reads.contracts.requireContract(asker.organisationId, contractId);
      const upcoming = await reads.invoiceRuns.upcoming(asker.organisationId, contractId);
      const next = upcoming.invoices.map((invoice) => ({ contractPlanId: invoice.contractPlanId, currency: invoice.currency, total: invoice.total }));
      const text = `Contract ${contract.name ?? contract.id} is ${contract.status}, from ${contract.startDate}${contract.endDate ? ` to ${contract.endDate}` : ', open-ended'}, on ${contract.plans.length} plan(s). A run today would invoice ${list(next, (invoice) => `${invoice.total} ${invoice.currency}`)}.`;
      return { text, data: { contract, upcoming }, sources: [`/contracts/${contractId}`, `/contracts/${contractId}/upcoming-invoice`] };
    },
  }),
  query({
    name: 'last_payment',
    description: "A customer's most recent payment",
    input: z.object({ customer: named('customer') }),
    actions: ['PaymentService:getPayments'],
    async run(reads, asker, input, find) {
      const customer = find.customer(input.customer);
      const page = await reads.payments.list(asker.organisationId, { page: 1, limit: 1 }, { customerId: customer.id });
      const payment = page.items[0];
      const who = customer.name;
      const text = payment ? `${who}'s last payment: ${payment.amount} ${payment.currency} on ${payment.paidAt.slice(0, 10)}.` : `${who} has made no payment.`;
      return { text, data: { payment: payment ?? null }, sources: [path('/payments', { customerId: customer.id, limit: '1' })] };
    },
  }),
  query({
    name: 'fx_rate',
    description: 'The exchange rate effective between two currencies on a day',
    input: z.object({ from: isoCurrency, to: isoCurrency, date: day }),
    actions: ['FxRateService:getFxRates'],
    async run(reads, asker, input) {
      const rate = await reads.fxRates.effective(asker.organisationId, input.from, input.to, input.date);
      const text = `1 ${input.from} = ${rate.rate} ${input.to} on ${input.date} (rate effective from ${rate.effectiveDate}).`;
      return { text, data: rate, sources: [path('/fx-rates/effective', { from: input.from, to: input.to, date: input.date })] };
    },
  }),
  query({
    name: 'invoice_run',
    description: "An invoice run's result (the latest, or one by id): its status, progress, totals and failures",
    input: z.object({ runId: id.optional() }),
    actions: ['InvoiceRunService:getInvoiceRuns'],
    async run(reads, asker, input) {
      const runId = input.runId ?? (await reads.invoiceRuns.list(asker.organisationId, { page: 1, limit: 1 })).items[0]?.id;
      if (!runId) return { text: 'No invoice run has been made yet.', data: null, sources: ['/invoice-runs'] };
      const run = await reads.invoiceRuns.view(asker.organisationId, runId);
      const text = `Invoice run ${run.id} for ${run.billingDate} is ${run.status}: ${run.progress.done} of ${run.progress.contracts} contract(s) done, ${run.progress.failed} failed; invoices total ${list(run.totals, (total) => `${total.amount} ${total.currency}`)}.`;
      return { text, data: run, sources: [`/invoice-runs/${run.id}`] };
    },
  }),
] as const;

export type ChatbotQuery = (typeof CHATBOT_QUERIES)[number];
export type ChatbotQueryName = ChatbotQuery['name'];

/**
 * Runs a question by its name, its input checked against its schema and the asker's role against its
 * permissions, its names found in the asker's organisation (`directory`) alone.
 */
export async function runQuery(reads: ChatbotReads, asker: Asker, name: string, input: unknown, directory: Directory): Promise<ChatAnswer> {
  const found = CHATBOT_QUERIES.find((candidate) => candidate.name === name);
  if (!found) throw AppError.validation(`${name} is not a question the chatbot answers`);
  if (!roleAllows(asker.role, found.actions)) throw new AppError('forbidden', 'Forbidden');
  const parsed = found.input.safeParse(input);
  if (!parsed.success) throw AppError.validation(`${name}: ${parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
  const span = parsed.data as { from?: unknown; to?: unknown };
  if (typeof span.from === 'string' && typeof span.to === 'string' && /^\d{4}-/.test(span.from) && span.to < span.from) {
    throw AppError.validation(`the period ends (${span.to}) before it starts (${span.from})`);
  }
  try {
    return await (found.run as (reads: ChatbotReads, asker: Asker, input: unknown, find: Finder) => Promise<ChatAnswer>)(reads, asker, parsed.data, finderOf(directory));
  } catch (error) {
    if (error instanceof Unresolved) return error.answer;
    throw error;
  }
}
