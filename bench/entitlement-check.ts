import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createDb } from '../src/db/knex';
import { cpuDelta, cpuSecondsByProcess, STACK_PROCESSES } from './cpu';
import { percentile, postBatchesFor, postJson, seedCustomerEntities, startBenchStack, type BatchLoad, type BenchStack } from './stack';

/**
 * The entitlement check and usage alerts under ingestion.
 *
 * 1. A stack in split processes (API and worker apart, the machine's PostgreSQL, a Temporal dev server),
 *    `--customers` customers with one entity each. Two `sum` meters: `calls` (counted) and `calls_plain`
 *    (the same meter, of another metric, that nothing counts).
 * 2. A metered feature over `calls`; one metered entitlement per customer (a monthly limit of 1,000,000;
 *    every tenth with a grant), and one usage alert per customer on `calls` (thresholds far above what the
 *    run sends), so that every batch's customers have an entitlement and an alert to evaluate. `--probes`
 *    more customers each have an alert with a threshold every 100 calls (20 of them, the most an alert has).
 * 3. Usage of the month so far: one event per customer per day through `POST /events/batch`.
 * 4. The set-up settles: the benchmark waits until every domain event was handed on, then 5 s.
 * 5. Idle: `--checks` value checks (`GET /customers/{id}/entitlements/api/value`) one at a time on random
 *    customers, after a warm-up.
 * 6. Load, `--rounds` times each, A then B: `--concurrency` clients post `--batch-size`-event batches of
 *    random customers for `--seconds`, of `calls_plain` (A: nothing counts it) or `calls` (B: 1,000
 *    entitlements and 1,000 alerts count it). Meanwhile one more client, on a thread of its own, checks
 *    values one at a time on the API process the batches go to (`sameApi`; with `--own-api`, in turn with
 *    a second API process of the same stack that serves no batch, `ownApi`), and a prober sends every
 *    second one batch of 100 calls for a probe customer, crossing its alert's next threshold: the time
 *    from that batch's 200 to the `alert.triggered` webhook's arrival is the alert latency.
 *
 *   npx tsx bench/entitlement-check.ts
 *   npx tsx bench/entitlement-check.ts --seconds 20 --checks 1000 [--own-api]
 *   npx tsx bench/entitlement-check.ts --customers 200 --seconds 10 --checks 300
 *
 * Every check, idle or under load, is timed from a thread of the benchmark's own, with `--client http`
 * (node:http on a kept-alive connection, the default) or `--client fetch`.
 */
const { values } = parseArgs({
  options: {
    customers: { type: 'string', default: '1000' },
    probes: { type: 'string', default: '10' },
    checks: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    'own-api': { type: 'boolean', default: false },
    client: { type: 'string', default: 'http' },
  },
});
const ownApi = values['own-api'];
const client = values.client;
if (client !== 'http' && client !== 'fetch') throw new Error('--client is http or fetch');
const customerCount = Number(values.customers);
const probeCount = Number(values.probes);
const checks = Number(values.checks);
const warmup = Number(values.warmup);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const batchSize = Number(values['batch-size']);
for (const [name, value] of Object.entries({ customerCount, probeCount, checks, seconds, rounds, concurrency, batchSize }))
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);

const COUNTED = 'calls';
const PLAIN = 'calls_plain';
const PROBE_STEP = 100;
/** As many thresholds as an alert may have: a probe customer crosses one a visit, `--probes` of them in turn. */
const PROBE_THRESHOLDS = 20;

const round1 = (ms: number) => Math.round(ms * 10) / 10;
const summary = (sorted: number[]) => ({ n: sorted.length, p50: round1(percentile(sorted, 50)), p95: round1(percentile(sorted, 95)), p99: round1(percentile(sorted, 99)) });

/** A receiver of `alert.triggered` webhooks: when each (alert, threshold) arrived. */
async function startReceiver() {
  const arrived = new Map<string, number>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { alertId: string; threshold: string } };
      if (event.type === 'alert.triggered') arrived.set(`${event.data.alertId} ${Number(event.data.threshold)}`, at);
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, arrived, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function api(stack: BenchStack, path: string, body: unknown, token = stack.adminToken): Promise<Record<string, unknown>> {
  const res = await postJson(`${stack.url}${path}`, body, token);
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)]!;

/**
 * Value checks, one at a time on random customers, in a thread of their own: under load the main thread
 * builds the batches' bodies and parses their answers (1,000 outcomes each), and a check timed on its
 * event loop would wait for those too. In turn on each of `urls` (the loaded API, then one of its own),
 * `count` rounds, or until told to stop. `client` is `http` (node:http with a kept-alive connection, the
 * default) or `fetch` (undici, which the runs before 2026-11-27 evening used): on two cores shared with the
 * stack, fetch's own CPU (about 1 ms a call) and its collections add to the figure what is not the API's.
 */
const CHECK_LOOP = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { urls, token, customerIds, client, count } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const headers = { authorization: 'Bearer ' + token };
const viaHttp = (url) => new Promise((resolve, reject) => {
  http.get(url, { agent, headers }, (res) => {
    res.on('error', reject);
    res.on('end', () => resolve(res.statusCode));
    res.resume();
  }).on('error', reject);
});
const viaFetch = async (url) => {
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  return res.status;
};
const get = client === 'fetch' ? viaFetch : viaHttp;
const timings = urls.map(() => []);
let running = true;
parentPort.on('message', () => { running = false; });
(async () => {
  for (let round = 0; count === undefined ? running : round < count; round += 1) {
    for (let i = 0; i < urls.length; i += 1) {
      const customerId = customerIds[Math.floor(Math.random() * customerIds.length)];
      const sent = performance.now();
      const status = await get(urls[i] + '/customers/' + customerId + '/entitlements/api/value');
      if (status !== 200) throw new Error('the value check answered ' + status);
      timings[i].push(performance.now() - sent);
    }
  }
  parentPort.postMessage(timings);
})();
`;

interface CheckLoop {
  /** Every check's latency in milliseconds, per URL; for a loop without a count, after telling it to stop. */
  timings: () => Promise<number[][]>;
}

function startCheckLoop(urls: string[], token: string, customerIds: readonly string[], count?: number): CheckLoop {
  const worker = new Worker(CHECK_LOOP, { eval: true, workerData: { urls, token, customerIds, client, count } });
  const timings = new Promise<number[][]>((resolve, reject) => {
    worker.once('message', (message: number[][]) => resolve(message));
    worker.once('error', reject);
  });
  return {
    timings: async () => {
      if (count === undefined) worker.postMessage('stop');
      const result = await timings;
      await worker.terminate();
      return result;
    },
  };
}

function batchOf(metric: string, entityIds: readonly string[], size: number, at = new Date().toISOString()): string {
  return JSON.stringify({ events: Array.from({ length: size }, () => ({ CustomerEntityId: pick(entityIds), metric, value: 1 + Math.floor(Math.random() * 10), timestamp: at })) });
}

async function main() {
  const receiver = await startReceiver();
  const stack = await startBenchStack('split', { env: { WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}` }, extraApis: ownApi ? 1 : 0 });
  const checkApi = stack.extraUrls?.[0];
  try {
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, customerCount + probeCount);
    const db = createDb(stack.databaseUrl, 2);
    const customerOf = new Map((await db('entities').whereIn('id', entityIds).select('id', 'customer_id')).map((row: { id: string; customer_id: string }) => [row.id, row.customer_id]));
    await db.destroy();
    const customers = entityIds.slice(0, customerCount);
    const probes = entityIds.slice(customerCount);
    const customerIds = customers.map((id) => customerOf.get(id)!);

    const counted = await api(stack, '/meters', { name: COUNTED, metric: COUNTED, aggregation: 'sum' });
    await api(stack, '/meters', { name: PLAIN, metric: PLAIN, aggregation: 'sum' });
    await api(stack, '/features', { key: 'api', name: 'API calls', meterId: counted.id });
    await api(stack, '/webhooks/endpoints', { url: `http://127.0.0.1:${receiver.port}/alerts`, eventTypes: ['alert.triggered'] });
    const monthStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1)).toISOString();
    const setUpAt = performance.now();
    for (const [index, customerId] of customerIds.entries()) {
      await api(stack, `/customers/${customerId}/entitlements`, { featureKey: 'api', type: 'metered', limit: 1_000_000, usagePeriod: 'month', anchor: monthStart }, stack.systemToken);
      if (index % 10 === 0) await api(stack, `/customers/${customerId}/entitlements/api/grants`, { amount: 5000 }, stack.systemToken);
      await api(stack, '/alerts', { name: `usage ${index}`, scope: { customerId }, metric: 'usage', meterId: counted.id, thresholds: [1e9, 2e9, 3e9], recurring: 'period' });
    }
    const probeAlerts = [];
    for (const [index, entityId] of probes.entries()) {
      const thresholds = Array.from({ length: PROBE_THRESHOLDS }, (_, step) => (step + 1) * PROBE_STEP);
      const alert = await api(stack, '/alerts', { name: `probe ${index}`, scope: { customerId: customerOf.get(entityId)! }, metric: 'usage', meterId: counted.id, thresholds, recurring: 'never' });
      probeAlerts.push({ entityId, alertId: alert.id as string, sent: 0 });
    }
    const setUpSeconds = (performance.now() - setUpAt) / 1000;

    // The month so far: one event per customer per day before today.
    const today = new Date().getUTCDate();
    for (let day = 1; day < today; day += 1) {
      const at = new Date(Date.parse(monthStart) + (day - 1) * 86_400_000 + 43_200_000).toISOString();
      for (let from = 0; from < customers.length; from += 1000) {
        const events = customers.slice(from, from + 1000).map((entityId) => ({ CustomerEntityId: entityId, metric: COUNTED, value: 100, timestamp: at }));
        await api(stack, '/events/batch', { events }, stack.systemToken);
      }
    }

    // What the set-up started settles first: every domain event handed on (the period workflows started).
    const settling = createDb(stack.databaseUrl, 1);
    for (let waited = 0; waited < 120; waited += 1) {
      const [row] = await settling('webhook_events').whereNull('dispatched_at').count<Array<{ count: string }>>({ count: '*' });
      if (Number(row?.count ?? 0) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await settling.destroy();
    await new Promise((resolve) => setTimeout(resolve, 5000));

    await stack.renewTokens();
    await startCheckLoop([stack.url], stack.systemToken, customerIds, warmup).timings();
    const idleCpuBefore = cpuSecondsByProcess(STACK_PROCESSES);
    const [idle = []] = await startCheckLoop([stack.url], stack.systemToken, customerIds, checks).timings();
    const idleCpu = cpuDelta(idleCpuBefore, cpuSecondsByProcess(STACK_PROCESSES));
    idle.sort((a, b) => a - b);

    const phases: Array<{ phase: 'A' | 'B'; load: BatchLoad; checks: number[]; ownApiChecks: number[]; cpu: Record<string, number> }> = [];
    const alertLatencies: number[] = [];
    let alertsMissing = 0;
    for (let round = 0; round < rounds; round += 1) {
      for (const phase of ['A', 'B'] as const) {
        await stack.renewTokens();
        const metric = phase === 'A' ? PLAIN : COUNTED;
        let running = true;
        const cpuBefore = cpuSecondsByProcess(STACK_PROCESSES);
        const crossings: Array<{ key: string; answeredAt: number }> = [];
        // With --own-api, in turn: a check on the API the batches go to, then one on an API process of its own.
        const checker = startCheckLoop([stack.url, ...(checkApi ? [checkApi] : [])], stack.systemToken, customerIds);
        const prober = (async () => {
          let next = 0;
          while (running) {
            const probe = probeAlerts[next++ % probeAlerts.length]!;
            if (probe.sent >= PROBE_STEP * PROBE_THRESHOLDS) break;
            const events = Array.from({ length: PROBE_STEP }, () => ({ CustomerEntityId: probe.entityId, metric: COUNTED, value: 1, timestamp: new Date().toISOString() }));
            await api(stack, '/events/batch', { events }, stack.systemToken);
            probe.sent += PROBE_STEP;
            crossings.push({ key: `${probe.alertId} ${probe.sent}`, answeredAt: performance.now() });
            await new Promise((resolve) => setTimeout(resolve, 1000));
          }
        })();
        const load = await postBatchesFor(stack, { seconds, concurrency, body: () => batchOf(metric, customers, batchSize) });
        running = false;
        const [underLoad = [], onOwnApi = []] = await checker.timings();
        await prober;
        // Webhooks of the phase's last crossings may still be on their way.
        await new Promise((resolve) => setTimeout(resolve, 6000));
        const cpu = cpuDelta(cpuBefore, cpuSecondsByProcess(STACK_PROCESSES));
        for (const crossing of crossings) {
          const arrived = receiver.arrived.get(crossing.key);
          if (arrived === undefined) alertsMissing += 1;
          else alertLatencies.push(arrived - crossing.answeredAt);
        }
        underLoad.sort((a, b) => a - b);
        onOwnApi.sort((a, b) => a - b);
        phases.push({ phase, load, checks: underLoad, ownApiChecks: onOwnApi, cpu });
        process.stderr.write(`${phase}: ${Math.round(load.accepted / load.seconds)} events/s, value check p99 ${round1(percentile(underLoad, 99))} ms\n`);
      }
    }
    alertLatencies.sort((a, b) => a - b);

    const rate = (phase: 'A' | 'B') => {
      const of = phases.filter((entry) => entry.phase === phase);
      return of.reduce((sum, entry) => sum + entry.load.accepted, 0) / of.reduce((sum, entry) => sum + entry.load.seconds, 0);
    };
    const loaded = phases.filter((entry) => entry.phase === 'B').flatMap((entry) => entry.checks).sort((a, b) => a - b);
    const loadedOwnApi = phases.filter((entry) => entry.phase === 'B').flatMap((entry) => entry.ownApiChecks).sort((a, b) => a - b);
    const results = {
      client,
      setup: { customers: customerCount, entitlements: customerCount, grants: Math.ceil(customerCount / 10), alerts: customerCount + probeCount, setUpSeconds: round1(setUpSeconds) },
      // With each process's CPU over the idle checks, per check (what else runs meanwhile included).
      idle: { ...summary(idle), goalP99Ms: 10, cpuMsPerCheck: Object.fromEntries(Object.entries(idleCpu).map(([label, seconds]) => [label, Math.round((seconds * 1_000_000) / checks) / 1000])) },
      underLoad: { sameApi: { ...summary(loaded), goalP99Ms: 25 }, ...(checkApi ? { ownApi: { ...summary(loadedOwnApi), goalP99Ms: 25 } } : {}) },
      alertLatency: { ...summary(alertLatencies), missing: alertsMissing, goalP99Ms: 5000 },
      ingestion: {
        phases: phases.map((entry) => ({ phase: entry.phase, eventsPerSecond: Math.round(entry.load.accepted / entry.load.seconds), failedRequests: entry.load.failedRequests, p99Ms: round1(percentile(entry.load.latencies, 99)) })),
        withoutEventsPerSecond: Math.round(rate('A')),
        withEventsPerSecond: Math.round(rate('B')),
        ratio: Math.round((rate('B') / rate('A')) * 1000) / 1000,
        goalRatio: 0.85,
        // CPU of each process from the phase's start to 6 s after its load (the relay's trailing work included), per 1,000 events accepted.
        cpuMsPer1000Events: Object.fromEntries(
          (['A', 'B'] as const).map((phase) => {
            const of = phases.filter((entry) => entry.phase === phase);
            const accepted = of.reduce((sum, entry) => sum + entry.load.accepted, 0);
            const labels = Object.keys(of[0]?.cpu ?? {}).filter((label) => of.some((entry) => entry.cpu[label]! > 0));
            return [phase, Object.fromEntries(labels.map((label) => [label, round1((of.reduce((sum, entry) => sum + entry.cpu[label]!, 0) * 1_000_000) / accepted)]))];
          }),
        ),
      },
    };
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await stack.stop();
    await receiver.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
