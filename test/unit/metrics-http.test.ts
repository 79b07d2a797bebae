import net from 'node:net';
import express from 'express';
import knex from 'knex';
import { Registry } from 'prom-client';
import request from 'supertest';
import { expressPath } from '../../src/http/route';
import { cachedRead, createApiMetrics, registerProcessMetrics, routeTemplate, UNMATCHED_ROUTE } from '../../src/observability/metrics';
import { startMetricsServer, type MetricsServer } from '../../src/observability/metrics-server';
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
  app.get(expressPath('/customers/{id}'), (_req, res) => {
    res.status(404).json({ message: 'Not found' });
  });
  app.post(expressPath('/invoices/{id}/items/{itemId}'), (_req, res) => {
    res.status(201).json({});
  });
  /** A scrape, as the metrics port answers it. */
  const scrape = async () => {
    const { contentType, body } = await metrics.render();
    return { contentType, text: body };
  };
  return { app, db, scrape };
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
  const { app, db, scrape } = appWithMetrics('postgres://postgres@127.0.0.1:1/none');
  afterAll(() => db.destroy());

  it('when requests reach parameterised routes and no route, then each is counted under its template and status, never its path', async () => {
    await request(app).get('/customers/cus_first').expect(404);
    await request(app).get('/customers/cus_second').expect(404);
    await request(app).post('/invoices/inv_1/items/itm_1').expect(201);
    await request(app).get('/no/such/path_xyz').expect(404);
    await request(app).get('/no/such/path_xyz').expect(404);

    const res = await scrape();
    expect(res.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sample(res.text, 'http_requests_total', { method: 'GET', route: '/customers/{id}', status: '404' })).toBe(2);
    expect(sample(res.text, 'http_requests_total', { method: 'POST', route: '/invoices/{id}/items/{itemId}', status: '201' })).toBe(1);
    expect(sample(res.text, 'http_requests_total', { method: 'GET', route: UNMATCHED_ROUTE, status: '404' })).toBe(2);
    expect(sample(res.text, 'http_request_duration_seconds_count', { method: 'GET', route: '/customers/{id}', status: '404' })).toBe(2);
    expect(sample(res.text, 'http_request_duration_seconds_bucket', { le: '+Inf', route: '/customers/{id}' })).toBe(2);
    expect(res.text).not.toMatch(/cus_first|cus_second|inv_1|path_xyz/);
  });

  it('when scraped, then the pool gauges, the process metrics and a failed figures read are reported', async () => {
    const res = await scrape();
    expect(sample(res.text, 'billing_db_pool_max_connections')).toBe(3);
    expect(sample(res.text, 'billing_db_pool_pending_acquires')).toBe(0);
    expect(sample(res.text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(res.text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(res.text, 'billing_figures_up')).toBe(0);
    // Left out rather than reported as zero: nothing was read.
    expect(sample(res.text, 'billing_invoices')).toBeUndefined();
    expect(sample(res.text, 'billing_status_counts_age_seconds')).toBeUndefined();
    expect(sample(res.text, 'billing_workers_alive')).toBeUndefined();
  });

  it('when the app itself is asked for /metrics, then no route answers it: the metrics are on a port of their own', async () => {
    await request(app).get('/metrics').expect(404);
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
    const { db, scrape } = appWithMetrics(`postgres://postgres@127.0.0.1:${port}/none`, 300);
    try {
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const started = Date.now();
        const res = await scrape();
        expect(Date.now() - started).toBeLessThan(1_500);
        expect(sample(res.text, 'billing_figures_up')).toBe(0);
        expect(sample(res.text, 'billing_db_pool_max_connections')).toBe(3);
      }
      // One read of the heartbeats and one of the counts: the second scrape waited on the first one's
      // heartbeat read instead of starting another, and left the failed counts alone until they are due.
      expect(sockets.size).toBe(2);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await db.destroy().catch(() => undefined);
    }
  });
});

describe('cachedRead', () => {
  function counted(results: (number | undefined | Error)[]) {
    let calls = 0;
    const read = async () => {
      const result = results[Math.min(calls, results.length - 1)];
      calls += 1;
      if (result instanceof Error) throw result;
      return result;
    };
    return { read, calls: () => calls };
  }

  it('when called again within the max age, then the first reading is given again without a read, and read again once older', async () => {
    let now = 1_000;
    const source = counted([1, 2]);
    const cached = cachedRead(source.read, { maxAgeMs: 60_000, now: () => now });
    expect(await cached()).toEqual({ value: 1, readAt: 1_000 });
    now += 59_999;
    expect(await cached()).toEqual({ value: 1, readAt: 1_000 });
    expect(source.calls()).toBe(1);
    now += 1;
    expect(await cached()).toEqual({ value: 2, readAt: 61_000 });
    expect(source.calls()).toBe(2);
  });

  it('when a read fails or gives nothing, then the reading is absent and not tried again before the max age', async () => {
    let now = 0;
    const source = counted([new Error('statement timeout'), undefined, 3]);
    const cached = cachedRead(source.read, { maxAgeMs: 10_000, now: () => now });
    expect(await cached()).toBeUndefined();
    now += 5_000;
    expect(await cached()).toBeUndefined();
    expect(source.calls()).toBe(1);
    now += 5_000;
    expect(await cached()).toBeUndefined();
    now += 10_000;
    expect(await cached()).toEqual({ value: 3, readAt: 20_000 });
    expect(source.calls()).toBe(3);
  });

  it('when the max age is 0, then every call reads; callers at the same time share one read', async () => {
    const source = counted([7]);
    const cached = cachedRead(source.read, { maxAgeMs: 0, now: () => 0 });
    await Promise.all([cached(), cached(), cached()]);
    expect(source.calls()).toBe(1);
    await cached();
    expect(source.calls()).toBe(2);
  });
});

describe('the process metrics', () => {
  it('when collected, then no gauge is named like a counter, and the figures by type remain', async () => {
    const registry = new Registry();
    registerProcessMetrics(registry);
    const families = await registry.getMetricsAsJSON();
    const misnamed = families.filter((family) => family.name.endsWith('_total') && String(family.type) !== 'counter').map((family) => family.name);
    expect(misnamed).toEqual([]);
    expect(families.map((family) => family.name)).toEqual(expect.arrayContaining(['nodejs_active_handles', 'nodejs_active_resources', 'process_cpu_seconds_total']));
  });
});

describe('the metrics server', () => {
  let server: MetricsServer;
  let fail = false;
  beforeAll(async () => {
    server = await startMetricsServer({
      host: '127.0.0.1',
      port: 0,
      setting: 'METRICS_PORT',
      render: async () => {
        if (fail) throw new Error('collect failed');
        return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '# HELP up_probe A probe\n# TYPE up_probe gauge\nup_probe 1\n' };
      },
      onError: () => undefined,
    });
  });
  afterAll(() => server.close());
  const at = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${server.port}${path}`, init);

  it('when GET /metrics, with or without a query, then the Prometheus text answers', async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/metrics`);
    for (const path of ['/metrics', '/metrics?x', '/metrics?name[]=up_probe']) {
      const res = await at(path);
      expect({ path, status: res.status, type: res.headers.get('content-type') }).toEqual({ path, status: 200, type: 'text/plain; version=0.0.4; charset=utf-8' });
      expect(sample(await res.text(), 'up_probe')).toBe(1);
    }
    const head = await at('/metrics', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('when any other path or method, then 404 or 405 and no metrics', async () => {
    for (const path of ['/', '/metrics/', '/METRICS', '/Metrics', '/%6Detrics', '/metrics/x', '//metrics', '/health']) {
      const res = await at(path);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(await res.text()).not.toContain('up_probe');
    }
    const post = await at('/metrics', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('when collecting fails, then 500 without a body of metrics', async () => {
    fail = true;
    try {
      const res = await at('/metrics');
      expect(res.status).toBe(500);
    } finally {
      fail = false;
    }
  });

  it('when the port is taken, then starting fails with the setting named', async () => {
    await expect(startMetricsServer({ host: '127.0.0.1', port: server.port, setting: 'WORKER_METRICS_PORT', render: async () => ({ contentType: 'text/plain', body: '' }) })).rejects.toThrow(
      /WORKER_METRICS_PORT: cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\)/,
    );
  });
});
