import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { createDb } from '../src/db/knex';
import { newId } from '../src/db/ids';
import { cpuDelta, cpuSecondsByProcess, STACK_PROCESSES } from './cpu';
import { percentile, postBatchesFor, postJson, seedCustomerEntities, startBenchStack, type BenchStack, type StackMode } from './stack';

/**
 * End-to-end ingestion through HTTP (POST /events/batch: claim check, the organisation's ingestion workflow
 * and its group children, the group activity's inserts), measured in one run against two raw ceilings on
 * the same database:
 * - the lean ceiling: the same rows, 1,000 per multi-row INSERT, into a lean table (bigint identity key,
 *   a unique dedupe index and one lookup index), on 4 connections;
 * - the project-table ceiling: the same, into `usage_events` itself, with its keys and indexes.
 * Before the throughput phase, the latency of single batches on the idle stack: 1 event, then 1,000.
 * After it, Temporal's actions during it, counted from the histories of the organisation's workflows (see
 * `temporalActions`), per 1,000 events accepted.
 *
 *   npx tsx bench/ingest-throughput.ts --mode split|start --seconds 30 --concurrency 8 --batch-size 1000
 *   npx tsx bench/ingest-throughput.ts --mode split --apis 2 --workers 2   (clients spread over the APIs)
 *   npx tsx bench/ingest-throughput.ts --usage-features off   (no meter, no entitlement: events and dedupe alone)
 *
 * With `--usage-features on` (the default), the organisation has what a metered product has: a `sum` meter
 * of `api_calls` grouped by `region` and one of `storage_gb` (so every event is added to a meter's
 * rollups in its chunk's transaction), and a metered entitlement on the `api_calls` meter for each of the
 * 50 customers (so every `api_calls` event is added to its customer's usage counter there too).
 */
const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'split' },
    seconds: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    'latency-samples': { type: 'string', default: '100' },
    'raw-connections': { type: 'string', default: '4' },
    apis: { type: 'string', default: '1' },
    workers: { type: 'string', default: '1' },
    'usage-features': { type: 'string', default: 'on' },
  },
});
if (values.mode !== 'split' && values.mode !== 'start') throw new Error('--mode is split or start');
const mode: StackMode = values.mode;
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const batchSize = Number(values['batch-size']);
const latencySamples = Number(values['latency-samples']);
const rawConnections = Number(values['raw-connections']);
const apis = Number(values.apis);
const workers = Number(values.workers);
if (mode === 'start' && (apis !== 1 || workers !== 1)) throw new Error('--apis and --workers are for --mode split');
if (values['usage-features'] !== 'on' && values['usage-features'] !== 'off') throw new Error('--usage-features is on or off');
const usageFeatures = values['usage-features'] === 'on';

function events(entityIds: string[], runId: string, batch: number, size = batchSize) {
  return Array.from({ length: size }, (_, i) => ({
    CustomerEntityId: entityIds[(batch * size + i) % entityIds.length],
    metric: i % 3 === 0 ? 'storage_gb' : 'api_calls',
    value: (i % 17) + 0.5,
    timestamp: new Date(Date.UTC(2026, 10, 1) + ((batch * size + i) % 2_592_000) * 1000).toISOString(),
    eventId: `${runId}-${batch}-${i}`,
    metadata: { region: i % 2 ? 'eu-west-1' : 'us-east-1', requestId: `${batch}-${i}` },
  }));
}

function rowsFor(organisationId: string, entityIds: string[], runId: string, batch: number) {
  return events(entityIds, runId, batch).map((event) => ({
    organisation_id: organisationId,
    customer_entity_id: event.CustomerEntityId,
    metric: event.metric,
    value: String(event.value),
    timestamp: event.timestamp,
    metadata: JSON.stringify(event.metadata),
    event_id: event.eventId,
  }));
}

const EventType = temporal.api.enums.v1.EventType;
/** The history events counted as Temporal actions, by the name reported. */
const ACTIONS: Record<string, number> = {
  workflowStarts: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
  workflowTasks: EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
  activityTasks: EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
  localActivities: EventType.EVENT_TYPE_MARKER_RECORDED,
  timers: EventType.EVENT_TYPE_TIMER_STARTED,
  updates: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
  signals: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
  searchAttributeUpserts: EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
};

/**
 * Temporal's work for the organisation's usage between `from` and `to`, from the histories of every
 * workflow of the organisation open in that span: each kind of action counted by its history events
 * (a workflow or child started, a workflow task, an activity task, a local activity's marker, a timer,
 * an Update, a signal, a search-attribute upsert) whose time falls in the span.
 */
async function temporalActions(address: string, organisationId: string, from: Date, to: Date): Promise<{ counts: Record<string, number>; total: number; workflows: number; historyEvents: number }> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const counts = Object.fromEntries(Object.keys(ACTIONS).map((name) => [name, 0]));
    let workflows = 0;
    let historyEvents = 0;
    const query = `OrganisationId = '${organisationId}' AND StartTime <= '${to.toISOString()}' AND (ExecutionStatus = 'Running' OR CloseTime >= '${from.toISOString()}')`;
    for await (const execution of client.workflow.list({ query })) {
      workflows += 1;
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      for (const event of history.events ?? []) {
        const at = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
        if (at < from.getTime() || at > to.getTime()) continue;
        historyEvents += 1;
        for (const [name, type] of Object.entries(ACTIONS)) if (event.eventType === type) counts[name]! += 1;
      }
    }
    return { counts, total: Object.values(counts).reduce((sum, count) => sum + count, 0), workflows, historyEvents };
  } finally {
    await connection.close();
  }
}

async function create(stack: BenchStack, path: string, body: unknown, token = stack.adminToken): Promise<{ id: string }> {
  const res = await postJson(`${stack.url}${path}`, body, token);
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string };
}

/** The meters and entitlements of `--usage-features on`: every event lands in a rollup, every `api_calls` event in a counter. */
async function setUpUsageFeatures(stack: BenchStack, entityIds: string[]): Promise<void> {
  const calls = await create(stack, '/meters', { name: 'API calls', metric: 'api_calls', aggregation: 'sum', groupBy: ['region'] });
  await create(stack, '/meters', { name: 'Storage', metric: 'storage_gb', aggregation: 'sum' });
  await create(stack, '/features', { key: 'api', name: 'API calls', meterId: calls.id });
  const db = createDb(stack.databaseUrl, 2);
  const customerIds: string[] = (await db('entities').whereIn('id', entityIds).orderBy('id').select('customer_id')).map((row: { customer_id: string }) => row.customer_id);
  await db.destroy();
  const monthStart = new Date(Date.UTC(2026, 10, 1)).toISOString();
  for (const customerId of customerIds) {
    await create(stack, `/customers/${customerId}/entitlements`, { featureKey: 'api', type: 'metered', limit: 1_000_000_000, usagePeriod: 'month', anchor: monthStart }, stack.systemToken);
  }
}

const summary = (sorted: number[]) => ({ p50: Math.round(percentile(sorted, 50)), p99: Math.round(percentile(sorted, 99)), n: sorted.length });

async function main(): Promise<void> {
  const stack = await startBenchStack(mode, { extraApis: apis - 1, extraWorkers: workers - 1 });
  const post = (body: string) =>
    fetch(`${stack.url}/events/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` }, body });
  try {
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, 50);
    if (usageFeatures) await setUpUsageFeatures(stack, entityIds);
    const runId = randomUUID().slice(0, 8);

    // Warm-up: the first batches pay for connection set-up and workflow caches.
    for (let i = 0; i < 5; i += 1) await (await post(JSON.stringify({ events: events(entityIds, `${runId}-warm`, i) }))).json();

    // Latency on the idle stack: one request at a time.
    const idle: Record<string, number[]> = { oneEvent: [], thousandEvents: [] };
    for (const [label, size] of [
      ['oneEvent', 1],
      ['thousandEvents', 1000],
    ] as const) {
      for (let i = 0; i < latencySamples; i += 1) {
        const body = JSON.stringify({ events: events(entityIds, `${runId}-idle${size}`, i, size) });
        const sent = performance.now();
        const res = await post(body);
        await res.json();
        if (res.status !== 200) throw new Error(`an idle ${size}-event batch answered ${res.status}`);
        idle[label]!.push(performance.now() - sent);
      }
      idle[label]!.sort((a, b) => a - b);
    }

    const cpuBefore = cpuSecondsByProcess(STACK_PROCESSES);
    const loadFrom = new Date();
    const { latencies, accepted, failedRequests, failures, seconds: elapsed } = await postBatchesFor(stack, {
      seconds,
      concurrency,
      body: (batch) => JSON.stringify({ events: events(entityIds, runId, batch) }),
      urls: [stack.url, ...(stack.extraUrls ?? [])],
    });
    const loadTo = new Date();
    const cpu = cpuDelta(cpuBefore, cpuSecondsByProcess(STACK_PROCESSES));
    const actions = await temporalActions(stack.temporalAddress, stack.organisationId, loadFrom, loadTo);

    const db = createDb(stack.databaseUrl, rawConnections + 2);
    const stored = Number((await db('usage_events').whereLike('event_id', `${runId}-%`).whereNot('event_id', 'like', `${runId}-warm%`).whereNot('event_id', 'like', `${runId}-idle%`).count({ n: '*' }))[0]!.n);

    /** Rows per second of 1,000-row INSERTs into `table` on `rawConnections` connections for `seconds`. */
    async function ceiling(table: string, row: (fields: ReturnType<typeof rowsFor>[number]) => Record<string, unknown>, tag: string): Promise<number> {
      let rows = 0;
      let batch = 0;
      const began = Date.now();
      const until = began + seconds * 1000;
      await Promise.all(
        Array.from({ length: rawConnections }, async () => {
          while (Date.now() < until) {
            const chunk = rowsFor(stack.organisationId, entityIds, `${runId}${tag}`, batch++).map(row);
            await db(table).insert(chunk);
            rows += chunk.length;
          }
        }),
      );
      return rows / ((Date.now() - began) / 1000);
    }

    await db.raw(`CREATE TABLE bench_lean_events (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, organisation_id text NOT NULL, customer_entity_id text NOT NULL,
      metric text NOT NULL, value numeric NOT NULL, "timestamp" timestamptz NOT NULL, metadata jsonb, event_id text)`);
    await db.raw('CREATE UNIQUE INDEX bench_lean_events_dedupe ON bench_lean_events (organisation_id, event_id)');
    await db.raw('CREATE INDEX bench_lean_events_lookup ON bench_lean_events (organisation_id, metric, customer_entity_id, "timestamp")');
    const leanRate = await ceiling('bench_lean_events', (fields) => fields, 'lean');
    const projectRate = await ceiling('usage_events', (fields) => ({ id: newId('evt'), ...fields, batch_id: `raw-${runId}` }), 'project');
    await db.raw('DROP TABLE bench_lean_events');
    await db.destroy();

    const e2eRate = accepted / elapsed;
    const cpuTotal = Object.values(cpu).reduce((sum, value) => sum + value, 0);
    const report = {
      date: new Date().toISOString(),
      settings: { mode, apis, workers, usageFeatures, seconds, concurrency, batchSize, latencySamples, rawConnections },
      idleLatencyMs: { oneEventBatch: summary(idle.oneEvent!), thousandEventBatch: summary(idle.thousandEvents!) },
      endToEnd: {
        batches: latencies.length,
        failedRequests,
        failures,
        acceptedEvents: accepted,
        storedEvents: stored,
        eventsPerSecond: Math.round(e2eRate),
        batchLatencyMs: summary(latencies),
      },
      leanCeilingRowsPerSecond: Math.round(leanRate),
      projectTableCeilingRowsPerSecond: Math.round(projectRate),
      ratioToLeanCeiling: Number((e2eRate / leanRate).toFixed(3)),
      ratioToProjectTableCeiling: Number((e2eRate / projectRate).toFixed(3)),
      cpuSecondsDuringEndToEnd: Object.fromEntries(Object.entries(cpu).filter(([, value]) => value > 0).map(([label, value]) => [label, Number(value.toFixed(1))])),
      cpuShareDuringEndToEnd: Object.fromEntries(Object.entries(cpu).filter(([, value]) => value > 0).map(([label, value]) => [label, `${Math.round((100 * value) / cpuTotal)}%`])),
      cpuCoresBusyDuringEndToEnd: Number((cpuTotal / elapsed).toFixed(2)),
      // The capacity model's figures: CPU of each kind of process per 1,000 events accepted.
      cpuMsPer1000Events: Object.fromEntries(Object.entries(cpu).filter(([, value]) => value > 0).map(([label, value]) => [label, Number(((value * 1_000_000) / accepted).toFixed(1))])),
      temporalDuringEndToEnd: {
        workflows: actions.workflows,
        historyEvents: actions.historyEvents,
        actions: actions.counts,
        actionsPer1000Events: Number(((1000 * actions.total) / accepted).toFixed(2)),
        historyEventsPer1000Events: Number(((1000 * actions.historyEvents) / accepted).toFixed(1)),
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (stored !== accepted) throw new Error(`stored ${stored} events but ${accepted} were accepted`);
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
