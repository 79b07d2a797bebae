import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'conventions');
});
afterAll(() => api.close());

describe('envelopes', () => {
  it('when a route is unknown, then 404 in the error envelope', async () => {
    const res = await api.http().get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ status: 'error', message: 'Not found', errors: [{ code: 1002 }] });
  });

  it('when the JSON is malformed, then 400 in the error envelope', async () => {
    const res = await api.http().post('/auth/system-login').set('Content-Type', 'application/json').send('{"clientKey": ');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', message: 'Malformed JSON', errors: [{ code: 1001, path: 'body', message: 'Request body is not valid JSON' }] });
    // Valid JSON that is not an object is a body of the wrong type, and says so.
    for (const [body, received] of [['null', 'null'], ['42', 'number'], ['"text"', 'string'], ['true', 'boolean']]) {
      const scalar = await api.http().post('/auth/system-login').set('Content-Type', 'application/json').send(body!);
      expect([scalar.status, scalar.body.errors]).toEqual([400, [{ code: 1001, path: 'body', message: `Request body must be a JSON object, not ${received}` }]]);
    }
  });

  it('when a query parameter is invalid, then 400 with the path of the parameter', async () => {
    const res = await api.http().get('/apps').query({ limit: 101 }).set(bearer(tenant.systemToken));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'query.limit' })]);
  });

  it('when a parameter that takes one value is sent more than once, then 400 says so by its path, and one that takes several is read', async () => {
    for (const [url, path] of [
      ['/apps?limit=5&limit=6', 'query.limit'],
      ['/invoices?status=draft&status=raised', 'query.status'],
      ['/invoices?overdue=true&overdue=false&page=1', 'query.overdue'],
      ['/customers?search=a&search=b', 'query.search'],
    ]) {
      const res = await api.http().get(url!).set(bearer(tenant.systemToken));
      expect([url, res.status, res.body.errors]).toEqual([url, 400, [{ code: 1001, path, message: 'is given 2 times; it takes one value' }]]);
    }
    // A wrong value sent once keeps its own message.
    const once = await api.http().get('/apps?limit=x').set(bearer(tenant.systemToken));
    expect(once.body.errors).toEqual([{ code: 1001, path: 'query.limit', message: expect.not.stringContaining('times') }]);
  });

  it('when any text of a body holds a NUL character or an unpaired surrogate, then 400 with its path and nothing is stored (in a batch, that event fails alone)', async () => {
    const customer = await api.http().post('/customers').set(bearer(tenant.systemToken)).send({ name: 'Acme\u0000 Ltd' });
    expect(customer.status).toBe(400);
    expect(customer.body.errors).toEqual([{ code: 1001, path: 'body.name', message: 'must not contain a NUL character' }]);
    const lone = await api.http().post('/customers').set(bearer(tenant.systemToken)).send({ name: 'Acme \uD800' });
    expect(lone.body.errors).toEqual([{ code: 1001, path: 'body.name', message: expect.stringContaining('unpaired surrogate') }]);
    const batch = await api
      .http()
      .post('/events/batch')
      .set(bearer(tenant.systemToken))
      .send({ events: [{ CustomerEntityId: 'ent_x', metric: 'ok', value: 1, timestamp: '2026-11-01T00:00:00Z' }, { CustomerEntityId: 'ent_x', metric: 'a\u0000b', value: 1, timestamp: '2026-11-01T00:00:00Z' }] });
    // Inside a batch, the event holding it fails alone.
    expect(batch.status).toBe(200);
    expect(batch.body.data.failedRecords).toContainEqual({ index: 1, code: '27', statusCode: 400, error: 'metric must not contain a NUL character' });
    const named = await api.db('customers').where({ organisation_id: tenant.organisationId }).whereLike('name', 'Acme%').count({ n: '*' });
    expect(Number(named[0]!.n)).toBe(0);
  });

  it('when a body holds a property its route does not take, whatever its value, then 400 naming it by path (in a batch, that event fails alone with "27")', async () => {
    const customer = await api.http().post('/customers').set(bearer(tenant.systemToken)).send({ name: 'Unknown Ltd', currency: 'USD', foo: { a: 1 }, bar: 2 });
    expect([customer.status, customer.body]).toEqual([
      400,
      {
        status: 'error',
        message: 'Validation failed',
        errors: [
          { code: 1001, path: 'body.foo', message: 'is not a property this request takes' },
          { code: 1001, path: 'body.bar', message: 'is not a property this request takes' },
        ],
      },
    ]);
    expect(Number((await api.db('customers').where({ organisation_id: tenant.organisationId, name: 'Unknown Ltd' }).count({ n: '*' }))[0]!.n)).toBe(0);
    // Deep in a body, and beside the problems the schema finds.
    const settings = await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ paymentTermsDays: -1, dunning: { days: [1] } });
    expect(settings.body.errors).toEqual([expect.objectContaining({ path: 'body.paymentTermsDays' }), { code: 1001, path: 'body.dunning', message: 'is not a property this request takes' }]);
    const event = { CustomerEntityId: 'ent_x', metric: 'm', value: 1, timestamp: '2026-11-01T00:00:00Z' };
    for (const route of ['/events/batch', '/usage/bulk']) {
      const batch = await api.http().post(route).set(bearer(tenant.systemToken)).send({ events: [event, { ...event, foo: { a: 1 } }] });
      expect(batch.status).toBe(200);
      // The first fails for its unknown customer entity (2002), not for the second's property.
      expect(batch.body.data.failedRecords.map((record: { index: number; code: unknown }) => [record.index, record.code])).toEqual([
        [0, 2002],
        [1, '27'],
      ]);
      expect(batch.body.data.failedRecords[1]).toEqual({ index: 1, code: '27', statusCode: 400, error: 'foo is not a property this request takes' });
      const envelope = await api.http().post(route).set(bearer(tenant.systemToken)).send({ events: [event], foo: { a: 1 } });
      expect([envelope.status, envelope.body.errors]).toEqual([400, [{ code: 1001, path: 'body.foo', message: 'is not a property this request takes' }]]);
    }
  });

  it('when any JSON body route gets a property it does not take, then 400 names it by path', async () => {
    const document = (await api.http().get('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>> };
    const missed: string[] = [];
    let probed = 0;
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (!operation.requestBody?.content['application/json']) continue;
        probed += 1;
        const url = path.replace('{objectType}', 'invoice').replace(/\{\w+\}/g, 'x');
        let named = false;
        // Whichever caller may use the route: the route's own refusals (403) come before the body is read.
        for (const token of [tenant.adminToken, tenant.systemToken]) {
          const res = await (api.http()[method as 'post'] as (u: string) => ReturnType<ReturnType<TestApi['http']>['post']>)(url).set(bearer(token)).send({ unknownProperty: { a: 1 } });
          if (res.status === 400 && res.body.errors.some((item: { path?: string }) => item.path === 'body.unknownProperty')) named = true;
        }
        if (!named) missed.push(`${method} ${path}`);
      }
    }
    expect(probed).toBeGreaterThan(50);
    expect(missed).toEqual([]);
  });

  it('when a request succeeds, then the success envelope with a request id header', async () => {
    const res = await api.http().get('/apps').set(bearer(tenant.systemToken)).set('X-Request-Id', 'req-123');
    expect(res.body).toMatchObject({ status: 'success', message: 'Success', data: { page: 1, limit: 20 } });
    expect(res.headers['x-request-id']).toBe('req-123');
    const generated = await api.http().get('/apps').set(bearer(tenant.systemToken));
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('when the server fails unexpectedly, then 500 without a stack trace or SQL', async () => {
    // A database without our tables: Postgres answers, but every statement fails (a server fault, not an outage).
    const adminUrl = new URL(process.env.TEST_DATABASE_ADMIN_URL!);
    const empty = `${process.env.TEST_DATABASE_NAME}_empty`;
    await api.db.raw(`CREATE DATABASE ${empty}`);
    adminUrl.pathname = `/${empty}`;
    const broken = await startTestApi({ DATABASE_URL: adminUrl.toString() });
    try {
      const res = await broken.http().get('/apps').set(bearer(tenant.systemToken));
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ status: 'error', message: 'Internal server error', errors: [{ code: 1000, message: 'Internal server error' }] });
    } finally {
      await broken.close();
      await api.db.raw(`DROP DATABASE ${empty}`);
    }
  });

  it('when the database cannot be reached, then 503 with Retry-After, not 500', async () => {
    const unreachable = await startTestApi({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    try {
      const res = await unreachable.http().get('/apps').set(bearer(tenant.systemToken));
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1006, path: 'postgres' }] });
    } finally {
      await unreachable.close();
    }
  });

  it('when a caller exceeds the per-token rate limit, then 429 with Retry-After and RateLimit headers', async () => {
    const limited = await startTestApi({ RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const statuses = [];
      for (let i = 0; i < 4; i += 1) statuses.push((await limited.http().get('/apps').set(bearer(tenant.systemToken))).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const res = await limited.http().get('/apps').set(bearer(tenant.systemToken));
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers.ratelimit ?? res.headers['ratelimit-policy']).toBeDefined();
      expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1004 }] });
    } finally {
      await limited.close();
    }
  });
});

describe('health and documents', () => {
  it('when Postgres, Temporal and the worker are up, then /health is green', async () => {
    const res = await api.http().get('/health');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ postgres: 'up', temporal: 'up', worker: 'up' });
  });

  it('when no worker polls the queue, then /health answers 503 naming the worker', async () => {
    const orphan = await startTestApi({ TEMPORAL_TASK_QUEUE: 'queue-without-worker' });
    try {
      const res = await orphan.http().get('/health');
      expect(res.status).toBe(503);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'worker' })]);
    } finally {
      await orphan.close();
    }
  });

  it('when everything is up, then /health/live and /health/ready answer 200', async () => {
    expect((await api.http().get('/health/live')).body.data).toEqual({ status: 'up' });
    expect((await api.http().get('/health/ready')).body.data).toEqual({ postgres: 'up', temporal: 'up' });
  });

  it('when Postgres accepts connections but never answers, then /health and /health/ready answer 503 within a second and /health/live 200', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const stuck = await startTestApi({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/none` });
    try {
      for (const path of ['/health', '/health/ready']) {
        const started = Date.now();
        const res = await stuck.http().get(path);
        expect(Date.now() - started).toBeLessThan(1500);
        expect(res.status).toBe(503);
        expect(res.body.errors).toEqual([{ code: 1006, path: 'postgres', message: 'postgres is down' }]);
      }
      expect((await stuck.http().get('/health/live')).status).toBe(200);
    } finally {
      // Hang up on the clients left waiting, so that no connection attempt outlives the test.
      sockets.forEach((socket) => socket.destroy());
      await stuck.close().catch(() => undefined);
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('when /openapi.json is read, then it is an OpenAPI 3.1 document whose operations match the routes', async () => {
    const res = await api.http().get('/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    const validation = spawnSync(process.execPath, [path.join(__dirname, 'support/validate-openapi.mjs')], { input: JSON.stringify(res.body), encoding: 'utf8' });
    expect(JSON.parse(validation.stdout)).toEqual({ valid: true, version: '3.1', errors: null });
    expect(res.body.paths['/events/batch'].post['x-required-actions']).toEqual(['MeterService:createUsageByMeter']);
    expect(res.body.paths['/auth/system-login'].post.requestBody.content['application/json'].schema.required).toEqual(['clientKey', 'clientSecret']);
    // Every documented operation is served: none answers "no route".
    for (const [path, methods] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(methods)) {
        const probe = await (api.http()[method as 'get'] as (u: string) => ReturnType<ReturnType<TestApi['http']>['get']>)(path.replace(/\{\w+\}/g, 'x'));
        expect(`${method} ${path} ${probe.status} ${probe.body?.message}`).not.toMatch(/ 404 Not found$/);
      }
    }
  });

  it('when /docs is opened, then the rendered API reference is served', async () => {
    const res = await api.http().get('/docs/').redirects(1);
    expect(res.status).toBe(200);
    expect(res.text).toContain('swagger-ui');
  });
});
