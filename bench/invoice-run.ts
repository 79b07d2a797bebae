import { writeFile } from 'node:fs/promises';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { Client, Connection } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { createDb } from '../src/db/knex';
import { newId } from '../src/db/ids';
import { ensurePartition } from '../src/modules/usage/event-partitions';
import { createBillingPlanRepository } from '../src/modules/billing-plans/billing-plans.repository';
import { createInvoiceRunRepository } from '../src/modules/invoice-runs/invoice-runs.repository';
import { createInvoiceRunService } from '../src/modules/invoice-runs/invoice-runs.service';
import { createMeterRepository } from '../src/modules/meters/meters.repository';
import { cpuDelta, cpuSecondsByProcess, STACK_PROCESSES } from './cpu';
import { percentile, postJson, startBenchStack } from './stack';
import { loadConfig } from '../src/config';

/**
 * A monthly invoice run through HTTP over many contracts, each with a flat fee billed in advance and
 * metered usage billed in arrears, against the bare-SQL floor of the same work on the same database:
 * one aggregation of the month's usage per entity, and the same invoices and lines written with
 * multi-row inserts. A last phase bills a few hundred more contracts in this process, through the same
 * service code, and times every query, to show where the time of one contract goes.
 */
const { values } = parseArgs({
  options: {
    contracts: { type: 'string', default: '10000' },
    events: { type: 'string', default: '1000000' },
    'profile-contracts': { type: 'string', default: '400' },
    /** Writes a V8 CPU profile of the last phase (open it in Chrome DevTools) to this file. */
    'cpu-profile': { type: 'string' },
  },
});
const contractCount = Number(values.contracts);
const eventCount = Number(values.events);
const profileCount = Number(values['profile-contracts']);
/** The worker's paging, as this environment configures it (INVOICE_RUN_PAGE_SIZE, INVOICE_RUN_PAGES_IN_FLIGHT). */
const config = loadConfig();
const paging = { pageSize: config.INVOICE_RUN_PAGE_SIZE, pagesInFlight: config.INVOICE_RUN_PAGES_IN_FLIGHT };

/** Usage is metered over November 2026; the run bills on 1 December, when November's usage and December's fee are due. */
const MONTH = { from: '2026-11-01', to: '2026-11-30', start: Date.UTC(2026, 10, 1), end: Date.UTC(2026, 11, 1) };
const BILLING_DATE = '2026-12-01';
const METRIC = 'api_calls';
const FEE = '310';
const UNIT_PRICE = '0.002';
const POLL_MS = 100;

interface Catalog {
  meterId: string;
  planId: string;
  feeItemId: string;
  usageItemId: string;
}

interface Billable {
  customerId: string;
  entityId: string;
  contractId: string;
  contractPlanId: string;
}

const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

async function inChunks<T>(rows: T[], size: number, lanes: number, write: (chunk: T[]) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < rows.length) {
        const start = next;
        next += size;
        await write(rows.slice(start, start + size));
      }
    }),
  );
}

/** The meter and the plan, through the same repositories the API uses. */
async function createCatalog(db: Knex, organisationId: string): Promise<Catalog> {
  const meter = await createMeterRepository(db).create(organisationId, { name: 'API calls', metric: METRIC, aggregation: 'sum' }, 'pending');
  const item = { skuId: undefined, meterId: undefined, billingTiming: undefined, quantity: undefined, tiers: undefined, packageSize: undefined };
  const plan = await createBillingPlanRepository(db).create(organisationId, {
    name: 'Monthly platform',
    currency: 'USD',
    billingPeriod: 'monthly',
    items: [
      { ...item, name: 'Platform fee', pricingModel: 'flat', unitPrice: FEE, billingTiming: 'in_advance' },
      { ...item, name: 'API calls', pricingModel: 'per_unit', unitPrice: UNIT_PRICE, meterId: meter.id, billingTiming: 'in_arrears' },
    ],
  });
  const fee = plan.items.find((candidate) => candidate.meterId === null)!;
  const usage = plan.items.find((candidate) => candidate.meterId !== null)!;
  return { meterId: meter.id, planId: plan.id, feeItemId: fee.id, usageItemId: usage.id };
}

/**
 * Active contracts from 1 November, one customer entity each, November's fee already billed (an invoice
 * and its claimed period, as the November run would have left them), and the month's usage interleaved
 * in time across the entities, as it arrives. Written straight to the tables, many rows per INSERT.
 */
async function seedContracts(db: Knex, organisationId: string, catalog: Catalog, count: number, events: number): Promise<Billable[]> {
  const billables: Billable[] = Array.from({ length: count }, () => ({ customerId: newId('cus'), entityId: newId('ent'), contractId: newId('con'), contractPlanId: newId('cpl') }));
  const org = { organisation_id: organisationId };
  const write = (table: string, rows: object[]) => inChunks(rows, 1000, 2, (chunk) => db(table).insert(chunk));
  await write('customers', billables.map((b, i) => ({ ...org, id: b.customerId, name: `Bench customer ${i}`, currency: 'USD' })));
  await write('entities', billables.map((b, i) => ({ ...org, id: b.entityId, type: 'customer', name: `Bench entity ${i}`, customer_id: b.customerId })));
  await write('contracts', billables.map((b) => ({ ...org, id: b.contractId, customer_id: b.customerId, currency: 'USD', status: 'active', start_date: MONTH.from })));
  await write('contract_plans', billables.map((b) => ({ ...org, id: b.contractPlanId, contract_id: b.contractId, plan_id: catalog.planId, start_date: MONTH.from })));

  const november = billables.map((b) => ({ ...b, invoiceId: newId('inv') }));
  const period = { from_date: MONTH.from, to_date: MONTH.to };
  await write('invoices', november.map((b) => ({ ...org, ...period, id: b.invoiceId, customer_id: b.customerId, contract_id: b.contractId, contract_plan_id: b.contractPlanId, currency: 'USD', date: MONTH.from })));
  await write('invoice_items', november.map((b) => ({ ...org, ...period, id: newId('itm'), invoice_id: b.invoiceId, plan_item_id: catalog.feeItemId, title: 'Platform fee', quantity: '1', price: FEE })));
  await write('charges', november.map((b) => ({ ...org, id: newId('chg'), contract_id: b.contractId, contract_plan_id: b.contractPlanId, plan_item_id: catalog.feeItemId, kind: 'fee', from_date: MONTH.from, to_date: MONTH.to, period_from: MONTH.from, period_to: MONTH.to, amount: FEE, invoice_id: b.invoiceId })));

  // Event n goes to entity n mod count at a time that walks through the month, so every entity's
  // events are spread over November and over the table's pages.
  const step = (MONTH.end - MONTH.start) / events;
  const eventRows = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => {
      const n = from + i;
      return { ...org, id: newId('evt'), customer_entity_id: billables[n % count]!.entityId, metric: METRIC, value: String((n % 17) + 0.5), timestamp: new Date(MONTH.start + Math.floor(n * step)).toISOString() };
    });
  // The month in a partition of its own, as the daily upkeep would have made it.
  await ensurePartition(db, new Date(MONTH.start));
  const chunk = 5000;
  const starts = Array.from({ length: Math.ceil(events / chunk) }, (_, i) => i * chunk);
  await inChunks(starts, 1, 2, async ([start]) => db('usage_events').insert(eventRows(start!, Math.min(events, start! + chunk))));
  return billables;
}

/** `INSERT … VALUES (…), (…)` of rows that share their keys, bound as parameters. */
async function insertRows(client: PgClient, table: string, rows: Array<Record<string, unknown>>): Promise<void> {
  const columns = Object.keys(rows[0]!);
  const tuples = rows.map((_, r) => `(${columns.map((_c, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
  await client.query(`INSERT INTO ${table} (${columns.map((column) => `"${column}"`).join(', ')}) VALUES ${tuples.join(', ')}`, rows.flatMap((row) => columns.map((column) => row[column])));
}

/**
 * The bare-SQL floor of the run: one aggregation of the month's usage grouped by entity and metric, then
 * the same invoices (one per contract, two lines each) written 1,000 rows per INSERT into copies of the
 * tables, each statement its own transaction. `mode` picks the copies: `temp` (LIKE … INCLUDING
 * DEFAULTS: no index, no WAL) or `logged` (ordinary tables, LIKE … INCLUDING ALL: the same indexes and
 * checks as the real ones, but no foreign keys).
 */
async function floor(databaseUrl: string, organisationId: string, catalog: Catalog, billables: Billable[], mode: 'temp' | 'logged') {
  const client = new PgClient({ connectionString: databaseUrl });
  await client.connect();
  const [invoices, items] = mode === 'temp' ? ['floor_invoices', 'floor_invoice_items'] : ['floor_logged_invoices', 'floor_logged_invoice_items'];
  const like = mode === 'temp' ? 'INCLUDING DEFAULTS' : 'INCLUDING ALL';
  await client.query(`CREATE ${mode === 'temp' ? 'TEMP ' : ''}TABLE ${invoices} (LIKE invoices ${like})`);
  await client.query(`CREATE ${mode === 'temp' ? 'TEMP ' : ''}TABLE ${items} (LIKE invoice_items ${like})`);
  try {
    const started = performance.now();
    const usage = await client.query<{ customer_entity_id: string; metric: string; value: string }>(
      `SELECT customer_entity_id, metric, coalesce(sum(value), 0)::text AS value FROM usage_events
        WHERE organisation_id = $1 AND metric = $2 AND "timestamp" >= $3 AND "timestamp" < $4 GROUP BY 1, 2`,
      [organisationId, METRIC, new Date(MONTH.start), new Date(MONTH.end)],
    );
    const aggregated = performance.now();
    const quantity = new Map(usage.rows.map((row) => [row.customer_entity_id, row.value]));
    const org = { organisation_id: organisationId };
    const invoiceRows = billables.map((b) => ({ ...org, id: newId('inv'), customer_id: b.customerId, contract_id: b.contractId, contract_plan_id: b.contractPlanId, currency: 'USD', date: BILLING_DATE, from_date: MONTH.from, to_date: '2026-12-31' }));
    const itemRows = invoiceRows.flatMap((invoice, i) => [
      { ...org, id: newId('itm'), invoice_id: invoice.id, plan_item_id: catalog.feeItemId, title: 'Platform fee', description: '2026-12-01 to 2026-12-31', quantity: '1', price: FEE, from_date: '2026-12-01', to_date: '2026-12-31' },
      { ...org, id: newId('itm'), invoice_id: invoice.id, plan_item_id: catalog.usageItemId, title: 'API calls', description: 'per unit', quantity: quantity.get(billables[i]!.entityId) ?? '0', price: UNIT_PRICE, from_date: MONTH.from, to_date: MONTH.to },
    ]);
    for (let i = 0; i < invoiceRows.length; i += 1000) await insertRows(client, invoices, invoiceRows.slice(i, i + 1000));
    for (let i = 0; i < itemRows.length; i += 1000) await insertRows(client, items, itemRows.slice(i, i + 1000));
    const done = performance.now();
    return { mode, groups: usage.rowCount, aggregateMs: Math.round(aggregated - started), insertMs: Math.round(done - aggregated), totalMs: Math.round(done - started) };
  } finally {
    await client.query(`DROP TABLE ${items}; DROP TABLE ${invoices}`);
    await client.end();
  }
}

const processLabels = STACK_PROCESSES;

interface RunView {
  id: string;
  status: string;
  progress: { contracts: number; done: number; failed: number };
  invoicesCreated: number;
}

/** The run through HTTP: from the POST to the first poll that reads `completed`, polling every POLL_MS. */
async function timedRun(url: string, token: string) {
  const cpuBefore = cpuSecondsByProcess(processLabels);
  const startedAt = performance.now();
  const started = await postJson(`${url}/invoice-runs`, { billingDate: BILLING_DATE }, token);
  if (started.status !== 201) throw new Error(`POST /invoice-runs answered ${started.status}: ${JSON.stringify(started.body)}`);
  const runId = started.body.data.id as string;
  const polls: Array<{ ms: number; bytes: number }> = [];
  let run: RunView;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const sent = performance.now();
    const res = await fetch(`${url}/invoice-runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    polls.push({ ms: performance.now() - sent, bytes: text.length });
    if (res.status !== 200) throw new Error(`GET /invoice-runs/${runId} answered ${res.status}`);
    run = (JSON.parse(text) as { data: RunView }).data;
    if (run.status !== 'running') break;
  }
  const wallMs = performance.now() - startedAt;
  const cpu = cpuDelta(cpuBefore, cpuSecondsByProcess(processLabels));
  return { runId, run, wallMs, cpu, polls };
}

/**
 * The run's workflow history as phases, in ms from the workflow's start: when the first activity (the
 * run's record) started and ended, when the first page started, when the last page ended, and when the
 * workflow closed.
 */
async function workflowPhases(temporalAddress: string, runId: string) {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const client = new Client({ connection });
    const history = await client.workflow.getHandle(`invoice-run:${runId}`).fetchHistory();
    const events = history.events ?? [];
    const at = (event: (typeof events)[number]) => Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6);
    const start = at(events[0]!);
    const typeOf = new Map<string, string>();
    const times: Record<string, number[]> = {};
    for (const event of events) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) typeOf.set(String(event.eventId), scheduled.activityType?.name ?? '?');
      const started = event.activityTaskStartedEventAttributes;
      const completed = event.activityTaskCompletedEventAttributes;
      const ref = started?.scheduledEventId ?? completed?.scheduledEventId;
      if (ref !== undefined && ref !== null) {
        const key = `${typeOf.get(String(ref))} ${started ? 'started' : 'completed'}`;
        (times[key] ??= []).push(at(event) - start);
      }
    }
    const first = (key: string) => Math.min(...(times[key] ?? [NaN]));
    const last = (key: string) => Math.max(...(times[key] ?? [NaN]));
    return {
      beginStartedMs: first('beginInvoiceRun started'),
      beginCompletedMs: first('beginInvoiceRun completed'),
      firstPageStartedMs: first('billContracts started'),
      lastPageCompletedMs: last('billContracts completed'),
      pages: times['billContracts completed']?.length ?? 0,
      finishCompletedMs: first('finishInvoiceRun completed'),
      closedMs: at(events.at(-1)!) - start,
    };
  } finally {
    await connection.close();
  }
}

/** Labels a statement by its verb and first table, `select contracts`, `insert invoice_items`, `BEGIN`… */
function statementLabel(sql: string): string {
  const verb = /^\s*(\w+)/.exec(sql)?.[1]?.toLowerCase() ?? '?';
  const table = /\b(?:from|into|update)\s+"?(\w+)"?/i.exec(sql)?.[1];
  if (!table) return sql.trim().split(/[\s;]+/)[0]!.toUpperCase();
  return `${verb} ${table}${/for update/i.test(sql) ? ' (lock)' : ''}`;
}

/**
 * Times every statement any pg client of this process sends, BEGIN and COMMIT included (knex's own query
 * events leave out transaction control), until the returned function puts the original back.
 */
function timeStatements(record: (sql: string, ms: number) => void): () => void {
  const prototype = PgClient.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function timed(this: PgClient, ...args: unknown[]) {
    const sql = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string }).text ?? '');
    const sent = performance.now();
    const callback = args.at(-1);
    // knex passes a callback; others await the promise.
    if (typeof callback === 'function') {
      args[args.length - 1] = (...result: unknown[]) => {
        record(sql, performance.now() - sent);
        (callback as (...result: unknown[]) => void)(...result);
      };
      return original.apply(this, args);
    }
    return (original.apply(this, args) as Promise<unknown>).finally(() => record(sql, performance.now() - sent));
  };
  return () => {
    prototype.query = original;
  };
}

/**
 * Bills contracts a page after another in this process, in the workflow's page size, through the
 * invoice-run service itself (the code the worker's activity runs, without Temporal), timing every
 * statement by its label.
 */
async function profileContracts(databaseUrl: string, organisationId: string, billables: Billable[]) {
  const db = createDb(databaseUrl, 4);
  const byLabel = new Map<string, { count: number; ms: number }>();
  try {
    const run = await createInvoiceRunRepository(db).insertOrFind({ id: newId('run'), organisationId, billingDate: BILLING_DATE, dryRun: false, contractIds: null, scheduleId: null, workflowId: `bench-profile-${Date.now()}`, createdBy: null });
    const service = createInvoiceRunService(db, paging);
    const restore = timeStatements((sql, ms) => {
      const label = statementLabel(sql);
      const entry = byLabel.get(label) ?? { count: 0, ms: 0 };
      byLabel.set(label, { count: entry.count + 1, ms: entry.ms + ms });
    });
    const started = performance.now();
    try {
      for (let i = 0; i < billables.length; i += paging.pageSize) {
        const contractIds = billables.slice(i, i + paging.pageSize).map((billable) => billable.contractId);
        const result = await service.billContracts({ organisationId, runId: run.id, contractIds, billingDate: BILLING_DATE, dryRun: false });
        if (result.failed > 0) throw new Error(`profile page ${i / paging.pageSize}: ${result.failed} contracts failed`);
      }
    } finally {
      restore();
    }
    const totalMs = performance.now() - started;
    const sqlMs = [...byLabel.values()].reduce((sum, entry) => sum + entry.ms, 0);
    const perContract = (ms: number) => Number((ms / billables.length).toFixed(3));
    return {
      contracts: billables.length,
      msPerContract: perContract(totalMs),
      statementsPerContract: Number(([...byLabel.values()].reduce((sum, entry) => sum + entry.count, 0) / billables.length).toFixed(1)),
      statementsPerPage: Number(([...byLabel.values()].reduce((sum, entry) => sum + entry.count, 0) / Math.ceil(billables.length / paging.pageSize)).toFixed(1)),
      sqlMsPerContract: perContract(sqlMs),
      outsideSqlMsPerContract: perContract(totalMs - sqlMs),
      byStatement: [...byLabel]
        .sort(([, a], [, b]) => b.ms - a.ms)
        .map(([label, entry]) => ({
          statement: label,
          perPage: Number((entry.count / Math.ceil(billables.length / paging.pageSize)).toFixed(2)),
          msPerContract: perContract(entry.ms),
          share: `${Math.round((100 * entry.ms) / totalMs)}%`,
        })),
    };
  } finally {
    await db.destroy();
  }
}

/** Runs `work`, recording a V8 CPU profile of this process into `file` when one is named. */
async function withCpuProfile<T>(file: string | undefined, work: () => Promise<T>): Promise<T> {
  if (!file) return work();
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
  }
}

async function main(): Promise<void> {
  const stack = await startBenchStack();
  const db = createDb(stack.databaseUrl, 4);
  try {
    const { organisationId, url, systemToken } = stack;
    const seedStarted = performance.now();
    const catalog = await createCatalog(db, organisationId);
    const billables = await seedContracts(db, organisationId, catalog, contractCount, eventCount);
    // The contracts billed in this process at the end live in an organisation of their own, out of the HTTP run's reach.
    const profileOrganisationId = newId('org');
    await db('organisations').insert({ id: profileOrganisationId, name: `bench-profile-${Date.now()}` });
    const profileCatalog = await createCatalog(db, profileOrganisationId);
    const profileBillables = await seedContracts(db, profileOrganisationId, profileCatalog, profileCount, profileCount * Math.round(eventCount / contractCount));
    await db.raw('VACUUM ANALYZE');
    const seedSeconds = seconds(performance.now() - seedStarted);
    process.stderr.write(`fixtures written in ${seedSeconds} s\n`);

    const floorBefore = await floor(stack.databaseUrl, organisationId, catalog, billables, 'temp');
    process.stderr.write(`floor (temp tables): ${floorBefore.totalMs} ms\n`);

    const loadBefore = os.loadavg()[0]!;
    const { runId, run, wallMs, cpu, polls } = await timedRun(url, systemToken);
    process.stderr.write(`run: ${seconds(wallMs)} s, ${run.status}\n`);

    const phases = await workflowPhases(stack.temporalAddress, runId);
    const record = await db('invoice_runs').where({ id: runId }).first<{ started_at: Date; completed_at: Date }>('started_at', 'completed_at');
    // Each contract's outcome row carries its transaction's start: when billing began and ended inside the run.
    const span = await db('invoice_run_contracts').where({ invoice_run_id: runId }).first<{ first: Date; last: Date }>(db.raw('min(updated_at) as first'), db.raw('max(updated_at) as last'));
    const sinceStart = (at: Date) => seconds(at.getTime() - record.started_at.getTime());
    const invoices = Number((await db('invoices').where({ invoice_run_id: runId }).count({ n: '*' }))[0]!.n);
    const lines = Number((await db('invoice_items as i').join('invoices as v', 'v.id', 'i.invoice_id').where('v.invoice_run_id', runId).count({ n: '*' }))[0]!.n);
    // Every usage line holds its entity's November sum, as the floor's aggregation computes it.
    const wrongUsage = Number(
      (
        await db.raw(
          `SELECT count(*) AS n FROM invoice_items i
             JOIN invoices v ON v.id = i.invoice_id
             JOIN entities e ON e.customer_id = v.customer_id
             LEFT JOIN (SELECT customer_entity_id, sum(value) AS total FROM usage_events
                         WHERE organisation_id = ? AND metric = ? AND "timestamp" >= ? AND "timestamp" < ? GROUP BY 1) u
               ON u.customer_entity_id = e.id
            WHERE v.invoice_run_id = ? AND i.plan_item_id = ? AND i.quantity IS DISTINCT FROM coalesce(u.total, 0)`,
          [organisationId, METRIC, new Date(MONTH.start), new Date(MONTH.end), runId, catalog.usageItemId],
        )
      ).rows[0].n,
    );

    const floorAfter = await floor(stack.databaseUrl, organisationId, catalog, billables, 'temp');
    const floorLogged = await floor(stack.databaseUrl, organisationId, catalog, billables, 'logged');
    process.stderr.write(`floor after the run: ${floorAfter.totalMs} ms (temp), ${floorLogged.totalMs} ms (logged)\n`);
    const profile = profileCount > 0 ? await withCpuProfile(values['cpu-profile'], () => profileContracts(stack.databaseUrl, profileOrganisationId, profileBillables)) : null;

    const floorMs = Math.min(floorBefore.totalMs, floorAfter.totalMs);
    const cpuTotal = Object.values(cpu).reduce((sum, value) => sum + value, 0);
    const pollMs = polls.map((poll) => poll.ms).sort((a, b) => a - b);
    const report = {
      date: new Date().toISOString(),
      settings: { contracts: contractCount, events: eventCount, billingDate: BILLING_DATE, pollMs: POLL_MS, profileContracts: profileCount, ...paging },
      fixturesSeconds: seedSeconds,
      loadAverageBeforeRun: Number(loadBefore.toFixed(2)),
      run: {
        status: run.status,
        progress: run.progress,
        invoicesCreated: run.invoicesCreated,
        wallSeconds: seconds(wallMs),
        recordedSeconds: sinceStart(record.completed_at),
        // An outcome's updated_at is its page transaction's start (now()).
        firstPageBeganAtSeconds: sinceStart(span.first),
        lastPageBeganAtSeconds: sinceStart(span.last),
        workflowPhasesMs: phases,
        contractsPerSecond: Math.round(contractCount / (wallMs / 1000)),
        polls: { count: polls.length, p50Ms: Math.round(percentile(pollMs, 50)), maxMs: Math.round(pollMs.at(-1) ?? 0), lastBytes: polls.at(-1)?.bytes },
      },
      check: { invoices, lines, wrongUsageLines: wrongUsage },
      floor: { before: floorBefore, after: floorAfter, loggedIndexedCopies: floorLogged },
      ratio: Number((wallMs / floorMs).toFixed(1)),
      target: { ratioAtMost: 3, wallSecondsBelow: 120, met: wallMs <= 3 * floorMs && wallMs < 120_000 },
      cpuSecondsDuringRun: Object.fromEntries(Object.entries(cpu).map(([label, value]) => [label, Number(value.toFixed(1))])),
      cpuShareDuringRun: Object.fromEntries(Object.entries(cpu).map(([label, value]) => [label, `${Math.round((100 * value) / cpuTotal)}%`])),
      cpuCoresBusyDuringRun: Number((cpuTotal / (wallMs / 1000)).toFixed(2)),
      profile,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (run.status !== 'completed' || invoices !== contractCount || lines !== 2 * contractCount || wrongUsage !== 0) {
      throw new Error(`the run did not bill what it should: ${run.status}, ${invoices} invoices, ${lines} lines, ${wrongUsage} wrong usage lines`);
    }
  } finally {
    await db.destroy();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
