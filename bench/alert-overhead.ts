import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createDb } from '../src/db/knex';
import { postBatchesFor, seedCustomerEntities, startBenchStack } from './stack';

/**
 * What alerts cost ingestion: end-to-end `POST /events/batch` throughput with no alert, then with `--alerts`
 * usage alerts on the customers the usage names, then with none again (the alerts deleted), on one stack.
 * After each phase, how long the outbox's relay (which evaluates the alerts) took to catch up: an alert
 * fires only once the relay has handed on its chunk's `usage.ingested`.
 *
 *   npx tsx bench/alert-overhead.ts --seconds 20 --concurrency 8 --batch-size 1000 --alerts 1000
 */
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    alerts: { type: 'string', default: '1000' },
    customers: { type: 'string', default: '50' },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const batchSize = Number(values['batch-size']);
const alertCount = Number(values.alerts);
const customerCount = Number(values.customers);

function events(entityIds: string[], runId: string, batch: number) {
  return Array.from({ length: batchSize }, (_, i) => ({
    CustomerEntityId: entityIds[(batch * batchSize + i) % entityIds.length],
    metric: i % 3 === 0 ? 'storage_gb' : 'api_calls',
    value: (i % 17) + 0.5,
    timestamp: new Date(Date.UTC(2026, 10, 1) + ((batch * batchSize + i) % 2_592_000) * 1000).toISOString(),
    eventId: `${runId}-${batch}-${i}`,
    metadata: { region: i % 2 ? 'eu-west-1' : 'us-east-1' },
  }));
}

async function main(): Promise<void> {
  const stack = await startBenchStack('split');
  const db = createDb(stack.databaseUrl, 2);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.url}${path}`, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.adminToken}` }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const payload = (await res.json()) as { data: { id: string } };
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(payload)}`);
    return payload.data;
  };
  try {
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, customerCount);
    const customerIds = (await db('entities').whereIn('id', entityIds).orderBy('id').pluck('customer_id')) as string[];
    const meters = [await call('POST', '/meters', { name: 'Calls', metric: 'api_calls', aggregation: 'sum' }), await call('POST', '/meters', { name: 'Storage', metric: 'storage_gb', aggregation: 'max' })];
    const runId = randomUUID().slice(0, 8);
    let batch = 0;

    /** One phase of load, then the time until the relay has handed on every event the phase recorded. */
    async function phase() {
      const load = await postBatchesFor(stack, { seconds, concurrency, body: () => JSON.stringify({ events: events(entityIds, runId, batch++) }) });
      const ended = Date.now();
      for (;;) {
        const [left] = (await db('webhook_events').whereNull('dispatched_at').count({ n: '*' })) as Array<{ n: string }>;
        if (Number(left!.n) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return { eventsPerSecond: Math.round(load.accepted / load.seconds), failedRequests: load.failedRequests, relayCatchUpMs: Date.now() - ended };
    }

    await postBatchesFor(stack, { seconds: 5, concurrency, body: () => JSON.stringify({ events: events(entityIds, runId, batch++) }) });
    const without = await phase();

    // Thresholds low enough that some fire during the run (on alerts that recur, of the summed meter: the usage is stamped before
    // the alerts are created), and high ones that never do.
    const alertIds: string[] = [];
    for (let i = 0; i < alertCount; i += 1) {
      const meter = meters[Math.floor(i / 2) % meters.length]!;
      const thresholds = i % 4 === 1 ? [100 * (1 + (i % 7)), 10_000 * (1 + (i % 5))] : [1_000_000_000 + i];
      alertIds.push((await call('POST', '/alerts', { name: `Alert ${i}`, scope: { customerId: customerIds[i % customerIds.length] }, metric: 'usage', meterId: meter.id, thresholds, recurring: i % 2 ? 'period' : 'never' })).id);
    }
    const withAlerts = await phase();
    const fired = Number(((await db('alert_triggers').count({ n: '*' })) as Array<{ n: string }>)[0]!.n);

    for (const id of alertIds) await call('DELETE', `/alerts/${id}`);
    const withoutAgain = await phase();

    const baseline = (without.eventsPerSecond + withoutAgain.eventsPerSecond) / 2;
    process.stdout.write(
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          settings: { seconds, concurrency, batchSize, alerts: alertCount, customers: customerCount },
          withoutAlerts: without,
          withAlerts: { ...withAlerts, triggersFired: fired },
          withoutAlertsAgain: withoutAgain,
          throughputWithAlertsToBaseline: Number((withAlerts.eventsPerSecond / baseline).toFixed(3)),
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await db.destroy();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
