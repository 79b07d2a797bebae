import { parseArgs } from 'node:util';
import { freePort } from '../src/temporal/dev-server';
import { percentile, seedCustomerEntities, startBenchStack } from './stack';

/**
 * Where a lone batch's time goes on the idle split stack: `--batches` batches of `--events` events, one at
 * a time with `--gap-ms` between them (after 20 to warm up), timed end to end through HTTP, and the
 * Temporal SDK's own histograms from the worker's metrics over the same span, as means per batch: the
 * workflow tasks of the organisation's ingestion workflow and of the group child (from the worker's taking
 * a task to its answer), the waits before the worker takes one, the server's answer to each completion,
 * the group's local activity (the chunk's transaction) and the group child from start to end.
 *
 *   npx tsx bench/lone-batch.ts --batches 50 --events 1 --gap-ms 100
 *   npx tsx bench/lone-batch.ts --relay off   (the worker without its outbox relay, WEBHOOK_RELAY=false)
 */
const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '50' },
    events: { type: 'string', default: '1' },
    'gap-ms': { type: 'string', default: '100' },
    relay: { type: 'string', default: 'on' },
  },
});
const batches = Number(values.batches);
const eventsPerBatch = Number(values.events);
const gapMs = Number(values['gap-ms']);
if (values.relay !== 'on' && values.relay !== 'off') throw new Error('--relay is on or off');
const relay = values.relay === 'on';

/** The SDK histograms read, by what they measure here: [metric, label filter or null]. */
const HISTOGRAMS: Record<string, [string, string | null]> = {
  'ingestion workflow task, executing': ['temporal_workflow_task_execution_latency', 'workflow_type="usageIngestionWorkflow"'],
  'group child workflow task, executing (holds the local activity)': ['temporal_workflow_task_execution_latency', 'workflow_type="usageGroupWorkflow"'],
  'local activity: the chunk transaction': ['temporal_local_activity_execution_latency', 'activity_type="ingestUsageGroup"'],
  'group child, start to end': ['temporal_workflow_endtoend_latency', 'workflow_type="usageGroupWorkflow"'],
  'workflow task, scheduled to taken': ['temporal_workflow_task_schedule_to_start_latency', 'task_queue="billing"'],
  'RespondWorkflowTaskCompleted, the server answering': ['temporal_request_latency', 'operation="RespondWorkflowTaskCompleted"'],
};

/** Each histogram's sum (ms) and count, over the series that match its filter. */
async function histograms(url: string): Promise<Record<string, { sum: number; count: number }>> {
  const lines = (await (await fetch(url)).text()).split('\n');
  const totals: Record<string, { sum: number; count: number }> = {};
  for (const [name, [metric, filter]] of Object.entries(HISTOGRAMS)) {
    const total = { sum: 0, count: 0 };
    for (const line of lines) {
      const match = /^(\w+)_(sum|count)\{([^}]*)\} (\S+)$/.exec(line);
      if (!match || match[1] !== metric || (filter && !match[3]!.includes(filter))) continue;
      total[match[2] as 'sum' | 'count'] += Number(match[4]);
    }
    totals[name] = total;
  }
  return totals;
}

async function main(): Promise<void> {
  const metricsPort = await freePort();
  const stack = await startBenchStack('split', { env: { WORKER_METRICS_PORT: String(metricsPort), ...(relay ? {} : { WEBHOOK_RELAY: 'false' }) } });
  try {
    const [entity] = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, 1);
    const post = async (): Promise<number> => {
      const events = Array.from({ length: eventsPerBatch }, (_, i) => ({
        CustomerEntityId: entity,
        metric: 'api_calls',
        value: 1,
        timestamp: new Date().toISOString(),
        eventId: `lone-${Date.now()}-${Math.random()}-${i}`,
      }));
      const sent = performance.now();
      const res = await fetch(`${stack.url}/events/batch`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${stack.systemToken}` }, body: JSON.stringify({ events }) });
      await res.json();
      if (res.status !== 200) throw new Error(`POST /events/batch answered ${res.status}`);
      return performance.now() - sent;
    };
    for (let i = 0; i < 20; i += 1) await post();
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const before = await histograms(metricsUrl);
    const latencies: number[] = [];
    for (let i = 0; i < batches; i += 1) {
      latencies.push(await post());
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    const after = await histograms(metricsUrl);
    latencies.sort((a, b) => a - b);
    const perBatch = Object.fromEntries(
      Object.keys(HISTOGRAMS).map((name) => {
        const sum = after[name]!.sum - before[name]!.sum;
        const count = after[name]!.count - before[name]!.count;
        return [name, { count, meanMs: count ? Number((sum / count).toFixed(1)) : null, perBatch: Number((count / batches).toFixed(2)) }];
      }),
    );
    console.log(
      JSON.stringify(
        {
          date: new Date().toISOString(),
          settings: { batches, eventsPerBatch, gapMs, relay },
          endToEndMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), min: Math.round(latencies[0]!) },
          sdkHistograms: perBatch,
        },
        null,
        2,
      ),
    );
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
