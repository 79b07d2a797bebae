import { parseArgs } from 'node:util';
import { createDb } from '../src/db/knex';
import { ensurePartition } from '../src/modules/usage/event-partitions';
import { percentile, postJson, seedCustomerEntities, startBenchStack } from './stack';

/**
 * Reading usage through a meter as the event table grows: `GET /meters/{id}/usage` for one customer entity
 * and one calendar month, over a table of `--events` rows (written straight into `usage_events` with
 * `generate_series`, spread evenly over `--entities` entities, two metrics and the twelve months of 2026),
 * one request at a time, on the split stack.
 *
 *   npx tsx bench/meter-usage-read.ts --events 10000000 --entities 1000 --requests 300
 */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    entities: { type: 'string', default: '1000' },
    requests: { type: 'string', default: '300' },
  },
});
const events = Number(values.events);
const entityCount = Number(values.entities);
const requests = Number(values.requests);
const STEP = 1_000_000;
const YEAR_SECONDS = 365 * 24 * 3600;

async function main(): Promise<void> {
  const stack = await startBenchStack('split');
  try {
    const entityIds = await seedCustomerEntities(stack.databaseUrl, stack.organisationId, entityCount);
    const db = createDb(stack.databaseUrl, 2);
    // The months of 2026 in partitions of their own, as the daily upkeep would have made them.
    for (let month = 0; month < 12; month += 1) await ensurePartition(db, new Date(Date.UTC(2026, month, 1)));
    const seedStarted = Date.now();
    for (let from = 0; from < events; from += STEP) {
      const to = Math.min(events, from + STEP) - 1;
      await db.raw(
        `INSERT INTO usage_events (id, organisation_id, customer_entity_id, metric, value, "timestamp", event_id)
         SELECT 'evt_seed_' || g, ?, (?::text[])[1 + g % ?], CASE WHEN g % 2 = 0 THEN 'api_calls' ELSE 'storage_gb' END,
                (g % 17) + 0.5, timestamptz '2026-01-01T00:00:00Z' + ((g * 7919) % ?) * interval '1 second', 'seed-' || g
         FROM generate_series(?::bigint, ?::bigint) AS g`,
        [stack.organisationId, entityIds, entityCount, YEAR_SECONDS, from, to],
      );
      process.stderr.write(`seeded ${to + 1} events\n`);
    }
    await db.raw('VACUUM ANALYZE usage_events');
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    const tableSize = (await db.raw("SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) AS size FROM pg_partition_tree('usage_events')")).rows[0].size as string;
    // What one request aggregates: the first entity's events of one metric in January.
    const eventsPerWindow = Number(
      (await db('usage_events').where({ organisation_id: stack.organisationId, customer_entity_id: entityIds[0], metric: 'api_calls' }).where('timestamp', '>=', '2026-01-01').where('timestamp', '<', '2026-02-01').count({ n: '*' }))[0]!.n,
    );
    await db.destroy();

    const meter = (await postJson(`${stack.url}/meters`, { name: 'API calls', metric: 'api_calls', aggregation: 'sum' }, stack.adminToken)).body.data;
    const timings: Record<'month' | 'monthByDay', number[]> = { month: [], monthByDay: [] };
    for (let i = 0; i < requests; i += 1) {
      const entity = entityIds[(i * 7) % entityIds.length]!;
      const month = (i % 12) + 1;
      const from = `2026-${String(month).padStart(2, '0')}-01T00:00:00Z`;
      const to = month === 12 ? '2027-01-01T00:00:00Z' : `2026-${String(month + 1).padStart(2, '0')}-01T00:00:00Z`;
      for (const kind of ['month', 'monthByDay'] as const) {
        const query = new URLSearchParams({ customerEntityId: entity, from, to, ...(kind === 'monthByDay' ? { groupBy: 'day' } : {}) });
        const sent = performance.now();
        const res = await fetch(`${stack.url}/meters/${meter.id}/usage?${query}`, { headers: { authorization: `Bearer ${stack.systemToken}` } });
        await res.json();
        if (res.status !== 200) throw new Error(`GET /meters/{id}/usage answered ${res.status}`);
        timings[kind].push(performance.now() - sent);
      }
    }
    const summary = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b);
      return { p50: Math.round(percentile(sorted, 50) * 10) / 10, p99: Math.round(percentile(sorted, 99) * 10) / 10, n: sorted.length };
    };
    process.stdout.write(
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          settings: { events, entities: entityCount, requests },
          seedSeconds: Math.round(seedSeconds),
          tableSize,
          eventsPerWindow,
          latencyMs: { oneEntityOneMonth: summary(timings.month), oneEntityOneMonthByDay: summary(timings.monthByDay) },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
