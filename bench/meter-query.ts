import http from 'node:http';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createDb } from '../src/db/knex';
import { ensurePartition } from '../src/modules/usage/event-partitions';
import { Decimal } from '../src/domain/money';
import { percentile, postBatchesFor, postJson, seedCustomerEntities, startBenchStack, type BatchLoad, type BenchStack } from './stack';

/**
 * Meter queries by dimension over a large event table, and what keeping meters up to date costs ingestion.
 *
 * 1. `--events` usage events of one metric (`tokens`) are written straight into `usage_events` (one
 *    `INSERT … SELECT generate_series` per slice of 500,000 on `--load-connections` connections, the
 *    table's secondary indexes dropped during the load and built again after it, then `VACUUM ANALYZE`),
 *    with the columns the ingestion path writes. They are spread evenly in time over `--months` calendar
 *    months from `--start` (UTC) and, by a hash of their number, over `--customers` customers (one customer
 *    entity each); each carries `region` (10 values), `model` (100 values) and `project` (1,000 values;
 *    each customer's events use `--projects-per-customer` of them, 0 for any of the 1,000) in its metadata,
 *    and a value from 0.25 to 1,000 in steps of 0.25.
 * 2. Then a `sum` meter over `tokens` with `groupBy: [region, model, project]` is created through the API.
 *    When `GET /meters/{id}` answers a `backfill`, the script waits for it to be `completed`.
 * 3. `GET /meters/{id}/query` one request at a time, after a warm-up, for each dimension: one customer and
 *    one month by day (`--customer-requests` each, random customers and months), and the whole organisation
 *    and one month by month (`--org-requests` each, the months in turn). Every answer is read whole (all its
 *    pages of 1,000 rows) and must have rows; one answer of each kind is checked row by row against a sum
 *    over the raw events in SQL.
 * 4. `POST /events/batch` for `--seconds` per phase, `--concurrency` clients, `--batch-size` events with
 *    the three dimensions: phase A for a metric no meter reads, phase B for the meter's metric, A B A B…
 *    (`--rounds` times each). With `--ingest-at live` (the default) each event's instant is within the 10
 *    minutes before it is sent, as a metering client sends usage; with `--ingest-at span`, a random second
 *    of the loaded months (old usage arriving late, the costliest case for rollups and totals).
 *
 *   npx tsx bench/meter-query.ts                        # 10,000,000 events
 *   npx tsx bench/meter-query.ts --events 200000 --seconds 10 --customer-requests 50 --org-requests 10
 *
 * Other options: --customers, --months, --start YYYY-MM, --projects-per-customer, --load-connections,
 * --warmup and --org-warmup (requests before timing), --rounds, --concurrency, --batch-size,
 * --backfill-timeout (seconds), --seed, --ingest-at live|span; BENCH_KEEP_DATABASE=1 leaves the database behind.
 * `--client http` (the default: node:http on a kept-alive connection) or `fetch` (undici, which the runs before
 * 2026-12-05 evening used) times the queries: on two cores shared with the stack, fetch's own CPU adds to the
 * figure what is not the API's. `--settle vacuum` (the default) runs `VACUUM ANALYZE meter_rollups` after the
 * backfill, as autovacuum does once a table's inserts pass its threshold, so that the queries read settled
 * months (pages all-visible, index-only scans); `--settle none` starts them at once.
 */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    customers: { type: 'string', default: '1000' },
    months: { type: 'string', default: '3' },
    start: { type: 'string', default: '2026-08' },
    'projects-per-customer': { type: 'string', default: '10' },
    'load-connections': { type: 'string', default: '2' },
    'customer-requests': { type: 'string', default: '200' },
    'org-requests': { type: 'string', default: '50' },
    warmup: { type: 'string', default: '10' },
    'org-warmup': { type: 'string', default: '3' },
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    'backfill-timeout': { type: 'string', default: '3600' },
    seed: { type: 'string', default: '1' },
    'ingest-at': { type: 'string', default: 'live' },
    client: { type: 'string', default: 'http' },
    settle: { type: 'string', default: 'vacuum' },
  },
});
const eventCount = Number(values.events);
const customerCount = Number(values.customers);
const monthCount = Number(values.months);
const projectsPerCustomer = Number(values['projects-per-customer']);
const loadConnections = Number(values['load-connections']);
const customerRequests = Number(values['customer-requests']);
const orgRequests = Number(values['org-requests']);
const warmup = Number(values.warmup);
const orgWarmup = Number(values['org-warmup']);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const batchSize = Number(values['batch-size']);
const backfillTimeoutSeconds = Number(values['backfill-timeout']);
const ingestAt = values['ingest-at'];
if (ingestAt !== 'live' && ingestAt !== 'span') throw new Error('--ingest-at is live or span');
if (values.client !== 'http' && values.client !== 'fetch') throw new Error('--client is http or fetch');
if (values.settle !== 'vacuum' && values.settle !== 'none') throw new Error('--settle is vacuum or none');
const LIVE_WINDOW_SECONDS = 600;
const startMatch = /^(\d{4})-(\d{2})$/.exec(values.start ?? '');
if (!startMatch) throw new Error('--start is a month, YYYY-MM');
for (const [name, value] of Object.entries({ eventCount, customerCount, monthCount, loadConnections, customerRequests, orgRequests, seconds, rounds, concurrency, batchSize }))
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);

const METRIC = 'tokens';
const UNMETERED_METRIC = 'requests';
const DIMENSIONS = [
  { key: 'region', values: 10, width: 1 },
  { key: 'model', values: 100, width: 2 },
  { key: 'project', values: 1000, width: 3 },
] as const;
type DimensionKey = (typeof DIMENSIONS)[number]['key'];
const LOAD_STEP = 500_000;
const PAGE = 1000;

/** The calendar months of the data, in UTC: [from, to) each. */
const months = Array.from({ length: monthCount }, (_, index) => {
  const from = new Date(Date.UTC(Number(startMatch[1]), Number(startMatch[2]) - 1 + index, 1));
  const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
  return { from, to, label: from.toISOString().slice(0, 7) };
});
const spanFrom = months[0]!.from;
const spanTo = months[monthCount - 1]!.to;
const spanSeconds = (spanTo.getTime() - spanFrom.getTime()) / 1000;

/** A small deterministic generator (mulberry32), so that runs ask the same questions. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = generator(Number(values.seed));
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const label = (key: DimensionKey, index: number) => {
  const dimension = DIMENSIONS.find((candidate) => candidate.key === key)!;
  return `${key}-${String(index).padStart(dimension.width, '0')}`;
};

const round1 = (ms: number) => Math.round(ms * 10) / 10;
const thousands = (n: number) => Math.round(n).toLocaleString('en-US');
const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Customer {
  customerId: string;
  entityId: string;
}

/** Writes the events straight into `usage_events`; answers the seconds the rows and the indexes took. */
async function load(databaseUrl: string, organisationId: string, customers: Customer[]): Promise<{ insertSeconds: number; indexSeconds: number; vacuumSeconds: number; tableSize: string }> {
  const db = createDb(databaseUrl, loadConnections + 1);
  try {
    const indexes = (
      await db.raw<{ rows: Array<{ indexname: string; indexdef: string }> }>(
        `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'usage_events'
           AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'usage_events'::regclass)`,
      )
    ).rows;
    // Each loaded month in its own partition, as the daily upkeep would have made it, not in the default one.
    for (const month of months) await ensurePartition(db, month.from);
    for (const index of indexes) await db.raw('DROP INDEX ??', [index.indexname]);

    const began = Date.now();
    let next = 0;
    let written = 0;
    const hash = (seed: number) => `(hashint8extended(g, ${seed}) & 9223372036854775807)`;
    await Promise.all(
      Array.from({ length: loadConnections }, async () => {
        while (next < eventCount) {
          const from = next;
          next += LOAD_STEP;
          const to = Math.min(eventCount, from + LOAD_STEP) - 1;
          const project = projectsPerCustomer > 0 ? `(c.i * ${projectsPerCustomer} + ${hash(4)} % ${projectsPerCustomer}) % 1000` : `${hash(4)} % 1000`;
          await db.raw(
            `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", metadata, event_id, job_id, batch_id)
             SELECT 'evt_seed_' || g, ?, (?::text[])[1 + c.i], ?, (${hash(5)} % 4000 + 1)::numeric / 4,
                    ?::timestamptz + ((g * ?::bigint) / ?::bigint) * interval '1 second',
                    jsonb_build_object('region', 'region-' || ${hash(2)} % 10,
                                       'model', 'model-' || lpad((${hash(3)} % 100)::text, 2, '0'),
                                       'project', 'project-' || lpad((${project})::text, 3, '0')),
                    'seed-' || g, NULL, 'seed'
             FROM generate_series(?::bigint, ?::bigint) AS g, LATERAL (SELECT (${hash(1)} % ?)::int AS i) AS c`,
            [organisationId, customers.map((customer) => customer.entityId), METRIC, spanFrom.toISOString(), spanSeconds, eventCount, from, to, customerCount],
          );
          written += to - from + 1;
          log(`loaded ${thousands(written)} of ${thousands(eventCount)} events`);
        }
      }),
    );
    const insertSeconds = (Date.now() - began) / 1000;

    const indexed = Date.now();
    await db.transaction(async (trx) => {
      await trx.raw("SET LOCAL maintenance_work_mem = '1GB'");
      for (const index of indexes) {
        // A partitioned table's index is listed as `ON ONLY` the parent: built that way it would cover no partition.
        await trx.raw(index.indexdef.replace(' ON ONLY ', ' ON '));
        log(`built ${index.indexname}`);
      }
    });
    const indexSeconds = (Date.now() - indexed) / 1000;
    const vacuumed = Date.now();
    await db.raw('VACUUM ANALYZE usage_events');
    const vacuumSeconds = (Date.now() - vacuumed) / 1000;
    const tableSize = (await db.raw<{ rows: Array<{ size: string }> }>("SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) AS size FROM pg_partition_tree('usage_events')")).rows[0]!.size;
    return { insertSeconds, indexSeconds, vacuumSeconds, tableSize };
  } finally {
    await db.destroy();
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** A GET on the kept-alive connection, its body parsed as JSON. */
function httpGetJson(url: string, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
          } catch (error) {
            reject(error as Error);
          }
        });
      })
      .on('error', reject);
  });
}

async function queryJson(stack: BenchStack, path: string): Promise<{ status: number; data: Record<string, unknown>; body: unknown }> {
  if (values.client === 'fetch') return getJson(stack, path);
  const { status, body } = await httpGetJson(`${stack.url}${path}`, stack.systemToken);
  return { status, data: (body as { data: Record<string, unknown> }).data, body };
}

async function getJson(stack: BenchStack, path: string): Promise<{ status: number; data: Record<string, unknown>; body: unknown }> {
  const res = await fetch(`${stack.url}${path}`, { headers: { authorization: `Bearer ${stack.systemToken}` } });
  const body = (await res.json()) as { data: Record<string, unknown> };
  return { status: res.status, data: body.data, body };
}

interface Backfill {
  seconds: number;
  eventsRead: number;
}

/** Waits for the meter's backfill, if the API has one; undefined when `GET /meters/{id}` answers none. */
async function awaitBackfill(stack: BenchStack, meterId: string, createdAt: number): Promise<Backfill | undefined> {
  const deadline = createdAt + backfillTimeoutSeconds * 1000;
  let lastLogged = 0;
  for (;;) {
    const { status, data, body } = await getJson(stack, `/meters/${meterId}`);
    if (status !== 200) throw new Error(`GET /meters/{id} answered ${status}: ${JSON.stringify(body)}`);
    const backfill = data.backfill as { status: string; eventsRead: number } | undefined | null;
    if (!backfill) return undefined;
    if (backfill.status === 'completed') return { seconds: (Date.now() - createdAt) / 1000, eventsRead: Number(backfill.eventsRead) };
    if (backfill.status === 'failed') throw new Error(`the meter's backfill failed: ${JSON.stringify(backfill)}`);
    if (Date.now() > deadline) throw new Error(`the meter's backfill did not complete within ${backfillTimeoutSeconds} s: ${JSON.stringify(backfill)}`);
    if (Date.now() - lastLogged > 60_000) {
      await stack.renewTokens();
      log(`backfill ${backfill.status}, ${thousands(Number(backfill.eventsRead))} events read`);
      lastLogged = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

interface QueryRow {
  windowStart: string;
  groups: Record<string, string | null>;
  value: string;
}

interface Question {
  customer?: Customer;
  month: (typeof months)[number];
  windowSize: 'day' | 'month';
  dimension: DimensionKey;
}

/** One whole answer of `GET /meters/{id}/query`: every page, one after the other. */
async function ask(stack: BenchStack, meterId: string, question: Question): Promise<{ ms: number; firstPageMs: number; rows: QueryRow[]; total: number; pages: number }> {
  const rows: QueryRow[] = [];
  let total: number;
  let page = 1;
  let firstPageMs = 0;
  const sent = performance.now();
  for (;;) {
    const query = new URLSearchParams({
      from: question.month.from.toISOString(),
      to: question.month.to.toISOString(),
      windowSize: question.windowSize,
      timezone: 'UTC',
      groupBy: question.dimension,
      limit: String(PAGE),
      page: String(page),
      ...(question.customer ? { customerId: question.customer.customerId } : {}),
    });
    const { status, data, body } = await queryJson(stack, `/meters/${meterId}/query?${query}`);
    if (status !== 200) throw new Error(`GET /meters/{id}/query answered ${status}: ${JSON.stringify(body)}`);
    if (page === 1) firstPageMs = performance.now() - sent;
    rows.push(...(data.rows as QueryRow[]));
    total = Number(data.total);
    if (rows.length >= total || (data.rows as QueryRow[]).length === 0) break;
    page += 1;
  }
  const ms = performance.now() - sent;
  if (total === 0 || rows.length !== total) throw new Error(`${describe(question)}: ${rows.length} rows read of a total of ${total}`);
  if (!rows.some((row) => new Decimal(row.value).gt(0))) throw new Error(`${describe(question)}: no usage in the answer`);
  return { ms, firstPageMs, rows, total, pages: page };
}

function describe(question: Question): string {
  return `${question.customer ? `customer ${question.customer.customerId}` : 'organisation'}, ${question.month.label} by ${question.windowSize}, groupBy=${question.dimension}`;
}

/** The answer against the same sums over the raw events, row by row. */
async function verify(databaseUrl: string, organisationId: string, question: Question, rows: QueryRow[]): Promise<void> {
  const db = createDb(databaseUrl, 1);
  try {
    const expected = (
      await db.raw<{ rows: Array<{ window_start: Date; group_value: string | null; value: string }> }>(
        `SELECT date_trunc(?, "timestamp" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS window_start, metadata ->> ? AS group_value, sum(value)::text AS value
         FROM usage_events
         WHERE organisation_id = ? AND metric = ? AND "timestamp" >= ? AND "timestamp" < ? ${question.customer ? 'AND customer_entity_id = ?' : ''}
         GROUP BY 1, 2`,
        [question.windowSize, question.dimension, organisationId, METRIC, question.month.from, question.month.to, ...(question.customer ? [question.customer.entityId] : [])],
      )
    ).rows;
    const want = new Map(expected.map((row) => [`${row.window_start.toISOString()}|${row.group_value}`, row.value]));
    const wrong: string[] = [];
    for (const row of rows) {
      const key = `${new Date(row.windowStart).toISOString()}|${row.groups[question.dimension]}`;
      const value = want.get(key);
      if (value === undefined || !new Decimal(value).eq(row.value)) wrong.push(`${key}: answered ${row.value}, the events sum to ${value ?? 'nothing'}`);
      want.delete(key);
    }
    for (const [key, value] of want) wrong.push(`${key}: not answered, the events sum to ${value}`);
    if (wrong.length > 0) throw new Error(`${describe(question)}: ${wrong.length} rows differ from the raw events, e.g. ${wrong.slice(0, 3).join('; ')}`);
  } finally {
    await db.destroy();
  }
}

interface QueryKind {
  name: string;
  goalMs: number;
  question: (index: number) => Question;
  requests: number;
  warmup: number;
}

interface QueryResult {
  name: string;
  goalMs: number;
  n: number;
  p50: number;
  p95: number;
  p99: number;
  firstPage: { p50: number; p99: number };
  rowsPerAnswer: number;
  pagesPerAnswer: number;
}

async function measure(stack: BenchStack, meterId: string, kind: QueryKind): Promise<QueryResult> {
  // An access token lives 15 minutes by default; a kind takes a few over raw events.
  await stack.renewTokens();
  for (let i = 0; i < kind.warmup; i += 1) await ask(stack, meterId, kind.question(i));
  const times: number[] = [];
  const firstPages: number[] = [];
  let rows = 0;
  let pages = 0;
  let last: { question: Question; rows: QueryRow[] } | undefined;
  for (let i = 0; i < kind.requests; i += 1) {
    const question = kind.question(i);
    const answer = await ask(stack, meterId, question);
    times.push(answer.ms);
    firstPages.push(answer.firstPageMs);
    rows += answer.rows.length;
    pages += answer.pages;
    last = { question, rows: answer.rows };
  }
  await verify(stack.databaseUrl, stack.organisationId, last!.question, last!.rows);
  times.sort((a, b) => a - b);
  firstPages.sort((a, b) => a - b);
  const result = {
    name: kind.name,
    goalMs: kind.goalMs,
    n: times.length,
    p50: round1(percentile(times, 50)),
    p95: round1(percentile(times, 95)),
    p99: round1(percentile(times, 99)),
    firstPage: { p50: round1(percentile(firstPages, 50)), p99: round1(percentile(firstPages, 99)) },
    rowsPerAnswer: Math.round(rows / times.length),
    pagesPerAnswer: Math.round((pages / times.length) * 10) / 10,
  };
  log(`${kind.name}: p50 ${result.p50} ms, p95 ${result.p95} ms, p99 ${result.p99} ms (${result.n} requests, ${result.rowsPerAnswer} rows in ${result.pagesPerAnswer} pages each; one answer checked against the raw events)`);
  return result;
}

function ingestEvents(customers: Customer[], metric: string, tag: string, batch: number): string {
  const events = Array.from({ length: batchSize }, (_, i) => {
    const customerIndex = Math.floor(random() * customers.length);
    const project = projectsPerCustomer > 0 ? (customerIndex * projectsPerCustomer + Math.floor(random() * projectsPerCustomer)) % 1000 : Math.floor(random() * 1000);
    return {
      CustomerEntityId: customers[customerIndex]!.entityId,
      metric,
      value: (Math.floor(random() * 4000) + 1) / 4,
      timestamp: (ingestAt === 'live' ? new Date(Date.now() - Math.floor(random() * LIVE_WINDOW_SECONDS) * 1000) : new Date(spanFrom.getTime() + Math.floor(random() * spanSeconds) * 1000)).toISOString(),
      eventId: `${tag}-${batch}-${i}`,
      metadata: { region: label('region', Math.floor(random() * 10)), model: label('model', Math.floor(random() * 100)), project: label('project', project) },
    };
  });
  return JSON.stringify({ events });
}

async function main(): Promise<void> {
  const stack = await startBenchStack('split');
  try {
    log(`stack up; seeding ${customerCount} customers`);
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, customerCount);
    const db = createDb(stack.databaseUrl, 1);
    const owners = new Map((await db('entities').whereIn('id', entityIds).select<Array<{ id: string; customer_id: string }>>('id', 'customer_id')).map((row) => [row.id, row.customer_id]));
    await db.destroy();
    const customers = entityIds.map((entityId) => ({ entityId, customerId: owners.get(entityId)! }));

    log(`loading ${thousands(eventCount)} events over ${months.map((month) => month.label).join(', ')}`);
    const loaded = await load(stack.databaseUrl, stack.organisationId, customers);
    log(`loaded in ${Math.round(loaded.insertSeconds)} s, indexes ${Math.round(loaded.indexSeconds)} s, VACUUM ANALYZE ${Math.round(loaded.vacuumSeconds)} s; ${loaded.tableSize}`);

    const createdAt = Date.now();
    const created = await postJson(`${stack.url}/meters`, { name: 'Tokens by region, model and project', metric: METRIC, aggregation: 'sum', groupBy: DIMENSIONS.map((dimension) => dimension.key) }, stack.adminToken);
    if (created.status !== 201 && created.status !== 200) throw new Error(`POST /meters answered ${created.status}: ${JSON.stringify(created.body)}`);
    const meterId = created.body.data.id as string;
    const backfill = await awaitBackfill(stack, meterId, createdAt);
    log(backfill ? `backfill completed in ${backfill.seconds.toFixed(1)} s, ${thousands(backfill.eventsRead)} events read` : 'the meter has no backfill; queries read the events');
    let settleSeconds: number | null = null;
    if (values.settle === 'vacuum') {
      const settling = Date.now();
      const settleDb = createDb(stack.databaseUrl, 1);
      await settleDb.raw('VACUUM ANALYZE meter_rollups');
      await settleDb.destroy();
      settleSeconds = (Date.now() - settling) / 1000;
      log(`VACUUM ANALYZE meter_rollups in ${settleSeconds.toFixed(1)} s`);
    }

    const queries: QueryResult[] = [];
    for (const { key } of DIMENSIONS)
      queries.push(
        await measure(stack, meterId, {
          name: `one customer, one month, by day, groupBy=${key}`,
          goalMs: 20,
          requests: customerRequests,
          warmup,
          question: () => ({ customer: pick(customers), month: pick(months), windowSize: 'day', dimension: key }),
        }),
      );
    for (const { key } of DIMENSIONS)
      queries.push(
        await measure(stack, meterId, {
          name: `whole organisation, one month, by month, groupBy=${key}`,
          goalMs: 200,
          requests: orgRequests,
          warmup: orgWarmup,
          question: (index) => ({ month: months[index % months.length]!, windowSize: 'month', dimension: key }),
        }),
      );

    await stack.renewTokens();
    const runId = randomUUID().slice(0, 8);
    for (const metric of [UNMETERED_METRIC, METRIC])
      for (let i = 0; i < 3; i += 1) {
        const res = await fetch(`${stack.url}/events/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` }, body: ingestEvents(customers, metric, `${runId}-warm-${metric}`, i) });
        await res.json();
        if (res.status !== 200) throw new Error(`a warm-up batch answered ${res.status}`);
      }
    const phases: Array<{ phase: 'A' | 'B'; round: number; load: BatchLoad }> = [];
    for (let round = 1; round <= rounds; round += 1)
      for (const phase of ['A', 'B'] as const) {
        const metric = phase === 'A' ? UNMETERED_METRIC : METRIC;
        const result = await postBatchesFor(stack, { seconds, concurrency, body: (batch) => ingestEvents(customers, metric, `${runId}-${phase}${round}`, batch) });
        log(`ingestion ${phase}${round} (${metric}): ${thousands(result.accepted / result.seconds)} events/s, ${result.failedRequests} failed requests`);
        if (result.failedRequests > 0) throw new Error(`ingestion ${phase}${round}: ${result.failedRequests} requests failed`);
        phases.push({ phase, round, load: result });
      }
    const rate = (phase: 'A' | 'B') => {
      const of = phases.filter((candidate) => candidate.phase === phase);
      return of.reduce((sum, candidate) => sum + candidate.load.accepted, 0) / of.reduce((sum, candidate) => sum + candidate.load.seconds, 0);
    };
    const ratio = rate('B') / rate('A');

    const lines = [
      `## Meter queries and ingestion with meters (${new Date().toISOString().slice(0, 10)})`,
      '',
      `${thousands(eventCount)} events of \`${METRIC}\` over ${months.length} months (${months.map((month) => month.label).join(', ')}, UTC), ${thousands(customerCount)} customers with one entity each; ` +
        `metadata \`region\` (10 values), \`model\` (100), \`project\` (1,000; ${projectsPerCustomer > 0 ? `${projectsPerCustomer} per customer` : 'any per customer'}); a \`sum\` meter with \`groupBy: [region, model, project]\` created after the load. ` +
        `Ingested events are ${ingestAt === 'live' ? 'live usage: each at an instant of the 10 minutes before it is sent' : 'old usage: each at a random second of the loaded months'} (\`--ingest-at ${ingestAt}\`).`,
      '',
      '| figure | value | goal |',
      '| --- | --- | --- |',
      `| load: \`INSERT … SELECT generate_series\` on ${loadConnections} connections, secondary indexes dropped | ${Math.round(loaded.insertSeconds)} s (${thousands(eventCount / loaded.insertSeconds)} events/s) | |`,
      `| load: indexes built again, then \`VACUUM ANALYZE\` | ${Math.round(loaded.indexSeconds)} s + ${Math.round(loaded.vacuumSeconds)} s; table with indexes ${loaded.tableSize} | |`,
      backfill
        ? `| meter backfill, \`POST /meters\` to \`completed\` | ${backfill.seconds.toFixed(1)} s, ${thousands(backfill.eventsRead)} events read (${thousands(backfill.eventsRead / backfill.seconds)} events/s) | |`
        : '| meter backfill | none (`GET /meters/{id}` answers no `backfill`) | |',
      ...(settleSeconds === null ? [] : [`| then \`VACUUM ANALYZE meter_rollups\` | ${settleSeconds.toFixed(1)} s | |`]),
      ...queries.map(
        (query) =>
          `| \`GET /meters/{id}/query\`: ${query.name} (${query.n} requests, ${query.rowsPerAnswer} rows${query.pagesPerAnswer > 1 ? ` in ${query.pagesPerAnswer} pages` : ''} per answer) | p50 ${query.p50} ms, p95 ${query.p95} ms, p99 **${query.p99} ms**${query.pagesPerAnswer > 1 ? `; the first page alone p50 ${query.firstPage.p50} ms, p99 ${query.firstPage.p99} ms` : ''} | p99 ≤ ${query.goalMs} ms: ${query.p99 <= query.goalMs ? 'met' : 'not met'} |`,
      ),
      ...phases.map(
        ({ phase, round, load: result }) =>
          `| ingestion ${phase}${round}: ${phase === 'A' ? 'a metric no meter reads' : "the meter's metric"} (${result.seconds.toFixed(0)} s, ${concurrency} clients, ${batchSize}-event batches) | ${thousands(result.accepted / result.seconds)} events/s (batch p50 ${Math.round(percentile(result.latencies, 50))} ms, p99 ${Math.round(percentile(result.latencies, 99))} ms) | |`,
      ),
      `| ingestion, the meter's metric ÷ a metric no meter reads | **${ratio.toFixed(2)}** (${thousands(rate('B'))} ÷ ${thousands(rate('A'))} events/s) | ≥ 0.90: ${ratio >= 0.9 ? 'met' : 'not met'} |`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    agent.destroy();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
