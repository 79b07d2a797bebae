import { Client as PgClient } from 'pg';
import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../../src/db/knex';
import { newId } from '../../src/db/ids';
import { createWorkerHeartbeatRepository } from '../../src/modules/workers/workers.repository';
import { startTestApi, type TestApi } from './support/harness';
import { sample } from '../support/prometheus-text';

/**
 * The API's /metrics against a database of its own, so that the figures read from Postgres are exactly
 * the rows this file writes, whatever the other test files do meanwhile.
 */
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL!;
const databaseName = `${process.env.TEST_DATABASE_NAME}_metrics`;
const taskQueue = 'metrics-queue';
let api: TestApi;
let db: Knex;


async function adminQuery(sql: string): Promise<void> {
  const admin = new PgClient({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

async function scrape(): Promise<string> {
  const res = await api.http().get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text;
}

beforeAll(async () => {
  await adminQuery(`CREATE DATABASE ${databaseName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  db = createDb(url.toString(), 2);
  await migrateLatest(db);
  api = await startTestApi({ DATABASE_URL: url.toString(), TEMPORAL_TASK_QUEUE: taskQueue });
});
afterAll(async () => {
  await api?.close();
  await db?.destroy();
  await adminQuery(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
});

it('when requests reach routes with ids and no route at all, then they are counted by route template and status, never by path', async () => {
  await api.http().get('/customers/cus_metrics_probe').expect(401);
  await api.http().get('/customers/cus_metrics_probe').expect(401);
  await api.http().get('/health/live').expect(200);
  await api.http().get('/nowhere/cus_metrics_probe').expect(404);

  const text = await scrape();
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '/customers/{id}', status: '401' })).toBe(2);
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '/health/live', status: '200' })).toBe(1);
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '(unmatched)', status: '404' })).toBe(1);
  expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/customers/{id}', status: '401' })).toBe(2);
  expect(text).not.toContain('cus_metrics_probe');
  // The scrape before this one is counted too.
  expect(sample(await scrape(), 'http_requests_total', { route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
});

it('when batches and invoices exist, then their gauges give the counts in Postgres by status, zero included', async () => {
  const organisationId = newId('org');
  await db('organisations').insert({ id: organisationId, name: `metrics-${organisationId}` });
  const batch = (status: string) => ({ id: newId('ubt'), organisation_id: organisationId, status, total: 1, chunk_count: 1 });
  await db('usage_batches').insert([batch('completed'), batch('completed'), batch('failed')]);
  const invoice = (status: string, deleted = false) => ({
    id: newId('inv'),
    organisation_id: organisationId,
    status,
    currency: 'USD',
    date: '2026-11-01',
    deleted_at: deleted ? new Date() : null,
  });
  await db('invoices').insert([invoice('draft'), invoice('paid'), invoice('paid'), invoice('paid'), invoice('draft', true)]);

  const text = await scrape();
  expect(sample(text, 'billing_figures_up')).toBe(1);
  const batches = Object.fromEntries(['processing', 'completed', 'failed', 'abandoned'].map((status) => [status, sample(text, 'billing_usage_batches', { status })]));
  expect(batches).toEqual({ processing: 0, completed: 2, failed: 1, abandoned: 0 });
  const invoices = Object.fromEntries(['draft', 'raised', 'sent', 'paid', 'cancelled'].map((status) => [status, sample(text, 'billing_invoices', { status })]));
  expect(invoices).toEqual({ draft: 1, raised: 0, sent: 0, paid: 3, cancelled: 0 });
});

it('when a worker beats on the queue, then the worker gauges show it alive, and none before', async () => {
  const before = await scrape();
  expect(sample(before, 'billing_workers_alive', { task_queue: taskQueue })).toBe(0);
  expect(sample(before, 'billing_worker_heartbeat_age_seconds', { task_queue: taskQueue })).toBeUndefined();

  await createWorkerHeartbeatRepository(db).beat({ taskQueue, identity: '1@metrics-host', host: 'metrics-host', pid: 1, startedAt: new Date() });
  const after = await scrape();
  expect(sample(after, 'billing_workers_alive', { task_queue: taskQueue })).toBe(1);
  expect(sample(after, 'billing_worker_heartbeat_age_seconds', { task_queue: taskQueue })).toBeLessThan(10);
});

it('when scraped, then the Postgres pool and the process are described', async () => {
  const text = await scrape();
  expect(sample(text, 'billing_db_pool_max_connections')).toBe(10);
  for (const name of ['billing_db_pool_used_connections', 'billing_db_pool_free_connections', 'billing_db_pool_pending_acquires']) {
    expect(sample(text, name)).toBeGreaterThanOrEqual(0);
  }
  expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
});
