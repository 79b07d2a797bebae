import type { Knex } from 'knex';
import pino from 'pino';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { createDb, migrateLatest } from '../../src/db/knex';
import { newId } from '../../src/db/ids';
import { startApi, type StartedApi } from '../../src/main/runtime';
import { createWorkerHeartbeatRepository } from '../../src/modules/workers/workers.repository';
import { freePort } from '../../src/temporal/dev-server';
import { sample } from '../support/prometheus-text';
import { adminQuery } from './support/admin-query';
import { promtoolProblems } from '../support/promtool';

/**
 * The API's and the worker's Prometheus metrics, each on a metrics port of its own, never on the API's
 * port. The API runs as `npm run api` starts it (startApi), against a database of its own, so that the
 * counts read from Postgres are exactly the rows this file writes, whatever the other test files do
 * meanwhile. The worker is the suite's shared one (global setup gives it a metrics port).
 */
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL!;
const databaseName = `${process.env.TEST_DATABASE_NAME}_metrics`;
const taskQueue = 'metrics-queue';
let databaseUrl: string;
/** Reads the counts at every scrape (METRICS_COUNTS_MAX_AGE_SECONDS=0). */
let api: StartedApi;
/** Reads them at most once a minute, the default. */
let cachingApi: StartedApi | undefined;
let db: Knex;

async function startMetricsApi(settings: Record<string, string>): Promise<StartedApi> {
  const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, TEMPORAL_TASK_QUEUE: taskQueue, HOST: '127.0.0.1', PORT: '0', ...settings });
  return startApi(config, { databaseUrl, temporalAddress: config.TEMPORAL_ADDRESS! }, pino({ level: 'silent' }), { metricsPort: await freePort() });
}

async function scrapeText(url: string | undefined): Promise<string> {
  const res = await fetch(url!);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

const scrape = () => scrapeText(api.metricsUrl);

beforeAll(async () => {
  await adminQuery(`CREATE DATABASE ${databaseName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  databaseUrl = url.toString();
  db = createDb(databaseUrl, 2);
  await migrateLatest(db);
  api = await startMetricsApi({ METRICS_COUNTS_MAX_AGE_SECONDS: '0' });
});
afterAll(async () => {
  await api?.close();
  await cachingApi?.close();
  await db?.destroy();
  await adminQuery(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
});

describe("the API's port", () => {
  // Every spelling Express could route to a handler mounted at /metrics, and a few more.
  const spellings = ['/metrics', '/metrics/', '/METRICS', '/Metrics', '/mEtRiCs', '/metrics?x', '/metrics/?x=1', '/%6Detrics', '/%6detrics', '//metrics', '/metrics;x', '/metrics.txt', '/%2Fmetrics'];

  it.each(spellings)('when %s is asked for, then 404 in the error envelope, with no metrics', async (path) => {
    const res = await request(api.url).get(path);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status: 'error', message: 'Not found', errors: [{ code: expect.any(Number), message: expect.any(String) }] });
    expect(res.text).not.toMatch(/billing_|http_requests_total|process_cpu/);
  });
});

describe("the API's metrics port", () => {
  it('when scraped, then it answers the Prometheus text format on /metrics only, and promtool finds no problem in it', async () => {
    expect(api.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(api.metricsUrl!).port).not.toBe(new URL(api.url).port);
    const text = await scrape();
    expect(promtoolProblems(text)).toEqual({ status: 0, problems: '' });
    for (const path of ['/', '/metrics/', '/METRICS', '/health', '/customers']) {
      expect({ path, status: (await fetch(new URL(path, api.metricsUrl))).status }).toEqual({ path, status: 404 });
    }
  });

  it('when requests reach routes with ids and no route at all, then they are counted by route template and status, never by path; scrapes are not counted', async () => {
    await request(api.url).get('/customers/cus_metrics_probe').expect(401);
    await request(api.url).get('/customers/cus_metrics_probe').expect(401);
    await request(api.url).get('/health/live').expect(200);
    await request(api.url).get('/nowhere/cus_metrics_probe').expect(404);
    // Refused before any route took it (the body parser's 400), and a method the path lacks: still named by
    // the declared path they were sent to.
    await request(api.url).post('/events/batch').set('Content-Type', 'application/json').send('{"events": [').expect(400);
    await request(api.url).put('/events/batch').expect(405);

    const text = await scrape();
    expect(sample(text, 'http_requests_total', { method: 'POST', route: '/events/batch', status: '400' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'PUT', route: '/events/batch', status: '405' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/customers/{id}', status: '401' })).toBe(2);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/health/live', status: '200' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '(unmatched)', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/customers/{id}', status: '401' })).toBe(2);
    expect(text).not.toContain('cus_metrics_probe');
    expect(sample(await scrape(), 'http_requests_total', { route: '/metrics' })).toBeUndefined();
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
    expect(sample(text, 'billing_status_counts_age_seconds', { table: 'invoices' })).toBeLessThan(5);
  });

  it('when scraped again within METRICS_COUNTS_MAX_AGE_SECONDS, then the counts are those of the first scrape, with their age, and only the heartbeats are read again', async () => {
    cachingApi = await startMetricsApi({});
    const first = await scrapeText(cachingApi.metricsUrl);
    const paidBefore = sample(first, 'billing_invoices', { status: 'paid' });
    expect(paidBefore).toBe(3);

    const organisationId = newId('org');
    await db('organisations').insert({ id: organisationId, name: `metrics-${organisationId}` });
    await db('invoices').insert({ id: newId('inv'), organisation_id: organisationId, status: 'paid', currency: 'USD', date: '2026-11-02' });
    const beatQueue = `${taskQueue}-cached`;
    await createWorkerHeartbeatRepository(db).beat({ taskQueue: beatQueue, identity: '2@metrics-host', host: 'metrics-host', pid: 2, startedAt: new Date() });

    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const second = await scrapeText(cachingApi.metricsUrl);
    expect(sample(second, 'billing_figures_up')).toBe(1);
    expect(sample(second, 'billing_invoices', { status: 'paid' })).toBe(paidBefore);
    expect(sample(second, 'billing_status_counts_age_seconds', { table: 'invoices' })).toBeGreaterThanOrEqual(1);
    expect(sample(second, 'billing_workers_alive', { task_queue: beatQueue })).toBe(1);
    // The API that reads at every scrape sees the new invoice.
    expect(sample(await scrape(), 'billing_invoices', { status: 'paid' })).toBe(4);
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
    expect(sample(text, 'nodejs_active_handles_total')).toBeUndefined();
  });
});

describe("the worker's metrics port", () => {
  it("when scraped, then it answers the Temporal SDK's metrics for its queue and the process's own in the Prometheus text format, and promtool finds no problem in it", async () => {
    const url = process.env.TEST_WORKER_METRICS_URL!;
    const text = await scrapeText(url);
    const queue = process.env.TEMPORAL_TASK_QUEUE!;
    for (const name of ['temporal_worker_task_slots_available', 'temporal_num_pollers']) {
      expect(text).toMatch(new RegExp(`^${name}\\{[^}]*task_queue="${queue}"[^}]*\\} \\d+`, 'm'));
    }
    // Counters are named as Prometheus names them.
    expect(text).toMatch(/^# TYPE temporal_request_total counter$/m);
    expect(sample(text, 'billing_worker_sdk_metrics_up')).toBe(1);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(promtoolProblems(text)).toEqual({ status: 0, problems: '' });
    for (const path of ['/', '/metrics/', '/METRICS', '/Metrics']) {
      expect({ path, status: (await fetch(new URL(path, url))).status }).toEqual({ path, status: 404 });
    }
  });
});
