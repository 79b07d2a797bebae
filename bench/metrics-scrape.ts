import { parseArgs } from 'node:util';
import { Client as PgClient } from 'pg';
import { createDb, migrateLatest } from '../src/db/knex';
import { createApiMetrics } from '../src/observability/metrics';
import { createInvoiceRepository } from '../src/modules/invoices/invoices.repository';
import { createUsageRepository } from '../src/modules/usage/usage.repository';
import { percentile } from './stack';

/**
 * What one scrape of the API's metrics costs as the invoice table grows: `--invoices` invoices and
 * `--batches` usage batches (written straight into their tables with `generate_series`, in a database of
 * its own, vacuumed and analysed), then `--scrapes` scrapes one after the other, first reading the counts
 * by status at every scrape (METRICS_COUNTS_MAX_AGE_SECONDS=0, what every scrape did before), then with
 * the default max age of 60 s. Only Postgres is needed (TEST_DATABASE_ADMIN_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres).
 *
 *   npx tsx bench/metrics-scrape.ts --invoices 1000000 --batches 100000 --scrapes 20
 */
const { values } = parseArgs({
  options: {
    invoices: { type: 'string', default: '1000000' },
    batches: { type: 'string', default: '100000' },
    scrapes: { type: 'string', default: '20' },
  },
});
const invoices = Number(values.invoices);
const batches = Number(values.batches);
const scrapes = Number(values.scrapes);
const STEP = 250_000;

async function admin(sql: string): Promise<void> {
  const client = new PgClient({ connectionString: process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const name = `billing_bench_metrics_${process.pid}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), 10);
  try {
    await migrateLatest(db);
    await db('organisations').insert({ id: 'org_bench', name: 'bench' });
    const seedStarted = Date.now();
    for (let from = 0; from < invoices; from += STEP) {
      await db.raw(
        `INSERT INTO invoices (id, organisation_id, status, currency, date, total, data, deleted_at)
         SELECT 'inv_seed_' || g, 'org_bench', (ARRAY['paid','paid','paid','sent','raised','draft','cancelled'])[1 + g % 7], 'EUR',
                date '2026-01-01' + (g % 365)::int, (g % 1000) + 0.5, jsonb_build_object('note', repeat('x', 200)),
                CASE WHEN g % 50 = 0 THEN now() END
         FROM generate_series(?::bigint, ?::bigint) AS g`,
        [from, Math.min(invoices, from + STEP) - 1],
      );
    }
    await db.raw(
      `INSERT INTO usage_batches (id, organisation_id, status, total, chunk_count)
       SELECT 'ubt_seed_' || g, 'org_bench', (ARRAY['completed','completed','completed','failed','processing'])[1 + g % 5], 1000, 1
       FROM generate_series(1, ?::bigint) AS g`,
      [batches],
    );
    await db.raw('VACUUM ANALYZE invoices');
    await db.raw('VACUUM ANALYZE usage_batches');
    console.log(`seeded ${invoices} invoices and ${batches} usage batches in ${Date.now() - seedStarted} ms`);

    for (const maxAge of [0, 60]) {
      const metrics = createApiMetrics({
        db,
        taskQueue: 'billing',
        usageBatchesByStatus: (trx) => createUsageRepository(trx).countBatchesByStatus(),
        invoicesByStatus: (trx) => createInvoiceRepository(trx).countByStatus(),
        // Long enough for the count to finish, so that its cost shows instead of the time bound.
        figuresTimeoutMs: 60_000,
        countsMaxAgeSeconds: maxAge,
      });
      await metrics.render();
      const times: number[] = [];
      for (let scrape = 0; scrape < scrapes; scrape += 1) {
        const started = process.hrtime.bigint();
        const { body } = await metrics.render();
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (!/^billing_figures_up 1$/m.test(body)) throw new Error('a scrape without the figures');
      }
      times.sort((a, b) => a - b);
      console.log(
        `METRICS_COUNTS_MAX_AGE_SECONDS=${maxAge}: ${scrapes} scrapes after a first one, median ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`,
      );
    }
  } finally {
    await db.destroy();
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
