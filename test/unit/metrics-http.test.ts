import net from 'node:net';
import express from 'express';
import knex from 'knex';
import request from 'supertest';
import { expressPath } from '../../src/http/route';
import { createApiMetrics, routeTemplate, UNMATCHED_ROUTE } from '../../src/observability/metrics';
import { sample } from '../support/prometheus-text';


const neverCalled = async () => {
  throw new Error('the figures are read only once the transaction has begun');
};

/** An app with the metrics and two routes declared the way the router declares them, against `databaseUrl`. */
function appWithMetrics(databaseUrl: string, figuresTimeoutMs = 2_000) {
  // Quiet: knex warns of every failed connection, and failing to connect is what these tests do.
  const db = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 3 }, log: { warn: () => undefined } });
  const metrics = createApiMetrics({ db, taskQueue: 'billing', usageBatchesByStatus: neverCalled, invoicesByStatus: neverCalled, figuresTimeoutMs });
  const app = express();
  app.use(metrics.middleware);
  app.get('/metrics', metrics.handler);
  app.get(expressPath('/customers/{id}'), (_req, res) => {
    res.status(404).json({ message: 'Not found' });
  });
  app.post(expressPath('/invoices/{id}/items/{itemId}'), (_req, res) => {
    res.status(201).json({});
  });
  return { app, db };
}

describe('routeTemplate', () => {
  it('when a route declared in OpenAPI style matched, then the label is that template again', () => {
    for (const path of ['/customers/{id}', '/invoices/{id}/items/{itemId}', '/health']) {
      expect(routeTemplate({ route: { path: expressPath(path) } })).toBe(path);
    }
  });

  it('when no route matched, then the label is the fixed one', () => {
    expect(routeTemplate({ route: undefined })).toBe(UNMATCHED_ROUTE);
  });
});

describe('the HTTP metrics', () => {
  // Nothing listens on port 1: the figures cannot be read, everything else still is.
  const { app, db } = appWithMetrics('postgres://postgres@127.0.0.1:1/none');
  afterAll(() => db.destroy());

  it('when requests reach parameterised routes and no route, then each is counted under its template and status, never its path', async () => {
    await request(app).get('/customers/cus_first').expect(404);
    await request(app).get('/customers/cus_second').expect(404);
    await request(app).post('/invoices/inv_1/items/itm_1').expect(201);
    await request(app).get('/no/such/path_xyz').expect(404);
    await request(app).get('/no/such/path_xyz').expect(404);

    const res = await request(app).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(res.text, 'http_requests_total', { method: 'GET', route: '/customers/{id}', status: '404' })).toBe(2);
    expect(sample(res.text, 'http_requests_total', { method: 'POST', route: '/invoices/{id}/items/{itemId}', status: '201' })).toBe(1);
    expect(sample(res.text, 'http_requests_total', { method: 'GET', route: UNMATCHED_ROUTE, status: '404' })).toBe(2);
    expect(sample(res.text, 'http_request_duration_seconds_count', { method: 'GET', route: '/customers/{id}', status: '404' })).toBe(2);
    expect(sample(res.text, 'http_request_duration_seconds_bucket', { le: '+Inf', route: '/customers/{id}' })).toBe(2);
    expect(res.text).not.toMatch(/cus_first|cus_second|inv_1|path_xyz/);
  });

  it('when scraped, then the pool gauges, the process metrics and a failed figures read are reported', async () => {
    const res = await request(app).get('/metrics').expect(200);
    expect(sample(res.text, 'billing_db_pool_max_connections')).toBe(3);
    expect(sample(res.text, 'billing_db_pool_pending_acquires')).toBe(0);
    expect(sample(res.text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(res.text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(res.text, 'billing_figures_up')).toBe(0);
    // Left out rather than reported as zero: nothing was read.
    expect(sample(res.text, 'billing_invoices')).toBeUndefined();
    expect(sample(res.text, 'billing_workers_alive')).toBeUndefined();
  });
});

describe('a scrape while Postgres hangs', () => {
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((socket) => sockets.add(socket));

  beforeAll(() => new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve)));
  afterAll(async () => {
    sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => silent.close(resolve));
  });

  it('when Postgres accepts connections but never answers, then /metrics still answers, without the figures, within the bound', async () => {
    const port = (silent.address() as net.AddressInfo).port;
    const { app, db } = appWithMetrics(`postgres://postgres@127.0.0.1:${port}/none`, 300);
    try {
      for (let scrape = 0; scrape < 2; scrape += 1) {
        const started = Date.now();
        const res = await request(app).get('/metrics').expect(200);
        expect(Date.now() - started).toBeLessThan(1_500);
        expect(sample(res.text, 'billing_figures_up')).toBe(0);
        expect(sample(res.text, 'billing_db_pool_max_connections')).toBe(3);
      }
      // The second scrape waited on the first one's read instead of starting another.
      expect(sockets.size).toBe(1);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await db.destroy().catch(() => undefined);
    }
  });
});
