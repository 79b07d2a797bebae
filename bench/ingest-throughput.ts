import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createDb } from '../src/db/knex';
import { newId } from '../src/db/ids';
import { cpuDelta, cpuSecondsByProcess, STACK_PROCESSES } from './cpu';
import { percentile, seedCustomerEntities, startBenchStack } from './stack';

/**
 * End-to-end ingestion through HTTP (POST /events/batch: claim check, parent and child workflows, the
 * chunk activity's insert) against the raw ceiling: the same rows multi-row-inserted straight into the
 * same table with the same indexes, at the same concurrency.
 */
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const batchSize = Number(values['batch-size']);

function events(entityIds: string[], runId: string, batch: number) {
  return Array.from({ length: batchSize }, (_, i) => ({
    CustomerEntityId: entityIds[(batch * batchSize + i) % entityIds.length],
    metric: i % 3 === 0 ? 'storage_gb' : 'api_calls',
    value: (i % 17) + 0.5,
    timestamp: new Date(Date.UTC(2026, 10, 1) + ((batch * batchSize + i) % 2_592_000) * 1000).toISOString(),
    eventId: `${runId}-${batch}-${i}`,
    metadata: { region: i % 2 ? 'eu-west-1' : 'us-east-1', requestId: `${batch}-${i}` },
  }));
}

function rowsFor(organisationId: string, entityIds: string[], runId: string, batch: number) {
  return events(entityIds, runId, batch).map((event) => ({
    id: newId('evt'),
    organisation_id: organisationId,
    customer_entity_id: event.CustomerEntityId,
    metric: event.metric,
    value: String(event.value),
    timestamp: event.timestamp,
    metadata: JSON.stringify(event.metadata),
    event_id: event.eventId,
    batch_id: `raw-${runId}`,
  }));
}

const processLabels = STACK_PROCESSES;

async function main(): Promise<void> {
  const stack = await startBenchStack();
  try {
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, 50);
    const runId = randomUUID().slice(0, 8);

    // Warm-up: the first batches pay for connection set-up and workflow caches.
    for (let i = 0; i < 3; i += 1) {
      await fetch(`${stack.url}/events/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` },
        body: JSON.stringify({ events: events(entityIds, `${runId}-warm`, i) }),
      });
    }

    const latencies: number[] = [];
    let accepted = 0;
    let failedRequests = 0;
    let nextBatch = 0;
    const cpuBefore = cpuSecondsByProcess(processLabels);
    const startedAt = Date.now();
    const deadline = startedAt + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < deadline) {
          const body = JSON.stringify({ events: events(entityIds, runId, nextBatch++) });
          const sent = performance.now();
          const res = await fetch(`${stack.url}/events/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` },
            body,
          });
          const payload = (await res.json()) as { data?: { summary?: { success: number } } };
          latencies.push(performance.now() - sent);
          if (res.status === 200 && payload.data?.summary) accepted += payload.data.summary.success;
          else failedRequests += 1;
        }
      }),
    );
    const elapsed = (Date.now() - startedAt) / 1000;
    const cpu = cpuDelta(cpuBefore, cpuSecondsByProcess(processLabels));

    const db = createDb(stack.databaseUrl, concurrency + 2);
    const stored = Number((await db('usage_events').whereLike('event_id', `${runId}-%`).whereNot('event_id', 'like', `${runId}-warm%`).count({ n: '*' }))[0]!.n);
    const phases = await db('usage_batches')
      .where({ organisation_id: stack.organisationId, status: 'completed' })
      .select(db.raw('extract(epoch from (completed_at - created_at)) * 1000 as ms'));
    const workflowMs = phases.map((row: { ms: string }) => Number(row.ms)).sort((a: number, b: number) => a - b);

    // Raw ceiling: the same rows, 1,000 per INSERT, straight into the same table and indexes.
    let rawRows = 0;
    let rawBatch = 0;
    const rawStarted = Date.now();
    const rawDeadline = rawStarted + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < rawDeadline) {
          const rows = rowsFor(stack.organisationId, entityIds, `${runId}r`, rawBatch++);
          await db('usage_events').insert(rows);
          rawRows += rows.length;
        }
      }),
    );
    const rawElapsed = (Date.now() - rawStarted) / 1000;
    await db.destroy();

    latencies.sort((a, b) => a - b);
    const e2eRate = accepted / elapsed;
    const rawRate = rawRows / rawElapsed;
    const cpuTotal = Object.values(cpu).reduce((sum, value) => sum + value, 0);
    const report = {
      date: new Date().toISOString(),
      settings: { seconds, concurrency, batchSize },
      endToEnd: {
        batches: latencies.length,
        failedRequests,
        acceptedEvents: accepted,
        storedEvents: stored,
        eventsPerSecond: Math.round(e2eRate),
        batchLatencyMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) },
        workflowMs: { p50: Math.round(percentile(workflowMs, 50)), p99: Math.round(percentile(workflowMs, 99)) },
      },
      rawCeiling: { rows: rawRows, rowsPerSecond: Math.round(rawRate) },
      ratio: Number((e2eRate / rawRate).toFixed(3)),
      cpuSecondsDuringEndToEnd: Object.fromEntries(Object.entries(cpu).map(([label, value]) => [label, Number(value.toFixed(1))])),
      cpuShareDuringEndToEnd: Object.fromEntries(Object.entries(cpu).map(([label, value]) => [label, `${Math.round((100 * value) / cpuTotal)}%`])),
      cpuCoresBusyDuringEndToEnd: Number((cpuTotal / elapsed).toFixed(2)),
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
