import http from 'node:http';
import zlib from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'edge');
});
afterAll(() => api.close());

const auth = () => bearer(tenant.systemToken);

/** A request with a raw path and body, untouched by any client library's encoding. */
function rawRequest(options: { method: string; path: string; headers?: Record<string, string>; body?: Buffer }): Promise<{ status: number; body: Record<string, unknown> & { errors?: unknown[] }; headers: http.IncomingHttpHeaders }> {
  const url = new URL(api.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: options.method, path: options.path, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : text });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('requests the API refuses at the edge', () => {
  it('when a body is not JSON, then 415 naming the content type, and nothing is created', async () => {
    const res = await api.http().post('/customers').set(auth()).set('Content-Type', 'text/plain').send('name=Plain&currency=USD');
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1009, path: 'headers.content-type' }] });
    const form = await api.http().post('/customers').set(auth()).type('form').send({ name: 'Form', currency: 'USD' });
    expect(form.status).toBe(415);
  });

  it('when a JSON body names a charset other than UTF-8, then 415 naming the content type, and nothing is created', async () => {
    const body = Buffer.from(JSON.stringify({ name: `Latin ${randomUUID()}`, currency: 'EUR' }), 'latin1');
    const res = await rawRequest({ method: 'POST', path: '/customers', headers: { ...auth(), 'Content-Type': 'application/json; charset=latin1' }, body });
    expect([res.status, res.body.errors]).toEqual([415, [expect.objectContaining({ code: 1009, path: 'headers.content-type' })]]);
    const utf8 = await rawRequest({ method: 'POST', path: '/customers', headers: { ...auth(), 'Content-Type': 'application/json; charset=utf-8' }, body: Buffer.from(JSON.stringify({ name: `Utf8 ${randomUUID()}`, currency: 'EUR' })) });
    expect(utf8.status).toBe(201);
  });

  it('when a gzip body is not gzip, then 400', async () => {
    const res = await rawRequest({
      method: 'POST',
      path: '/customers',
      headers: { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: Buffer.from('this is not gzip at all'),
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1001, path: 'body' }] });
  });

  it('when a gzip body is real gzip, then it is read', async () => {
    const res = await rawRequest({
      method: 'POST',
      path: '/customers',
      headers: { ...auth(), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: zlib.gzipSync(JSON.stringify({ name: 'Zipped', currency: 'USD' })),
    });
    expect(res.status).toBe(201);
  });

  it('when JSON is nested thousands deep, then 400 at once, and a body at the limit is still read', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const started = Date.now();
    const res = await rawRequest({ method: 'POST', path: '/customers', headers: { ...auth(), 'Content-Type': 'application/json' }, body: Buffer.from(deep) });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]).toMatchObject({ code: 1001, path: 'body' });
    // A string full of brackets is not nesting.
    const brackets = JSON.stringify({ name: `${'['.repeat(100)}"\\`, currency: 'USD' });
    const fine = await rawRequest({ method: 'POST', path: '/customers', headers: { ...auth(), 'Content-Type': 'application/json' }, body: Buffer.from(brackets) });
    expect(fine.status).toBe(201);
  });

  it('when free-form JSON nests arrays directly in arrays more than 8 deep, then 400 naming the array too deep; 8 deep is stored', async () => {
    const nested = (depth: number): unknown => (depth === 0 ? 'x' : [nested(depth - 1)]);
    const tooDeep = await api.http().post('/organisation/attributes').set(auth()).send({ key: 'shape', value: nested(9) });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.value.0.0.0.0.0.0.0.0', message: expect.stringContaining('more than 8 deep') })]);
    await api.http().post('/organisation/attributes').set(auth()).send({ key: 'shape', value: nested(8) }).expect(201);
  });

  it('when a path is not valid percent-encoding, then 400 rather than a server error', async () => {
    const res = await rawRequest({ method: 'GET', path: '/customers/%FF', headers: auth() });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1001, path: 'params' }] });
  });

  it('when one event of a batch holds a NUL character, then that event alone fails with "27" and its neighbours are stored', async () => {
    const { entityId } = await createCustomerEntity(api, tenant);
    const prefix = randomUUID();
    const events = [
      usageEvent(entityId, { eventId: `${prefix}-0` }),
      usageEvent(entityId, { eventId: `${prefix}-1`, metadata: { note: 'bad\u0000byte' } }),
      usageEvent(entityId, { eventId: `${prefix}-2`, metric: 'api\ud800calls' }),
      usageEvent(entityId, { eventId: `${prefix}-3` }),
      usageEvent(entityId, { eventId: `${prefix}-4`, metadata: { ['bad\u0000key']: 1 } }),
    ];
    const res = await api.http().post('/events/batch').set(auth()).send({ events });
    expect(res.status).toBe(200);
    expect(res.body.data.summary).toEqual({ success: 2, failed: 3, total: 5, duplicates: 0 });
    // The key is named with its NUL written as an escape: the outcome that names it is stored too.
    expect(res.body.data.failedRecords).toEqual([
      { index: 1, code: '27', statusCode: 400, error: 'metadata.note must not contain a NUL character' },
      { index: 2, code: '27', statusCode: 400, error: expect.stringMatching(/^metric must be valid Unicode/) },
      { index: 4, code: '27', statusCode: 400, error: 'metadata.bad\\u0000key has a key that must not contain a NUL character' },
    ]);
    const stored = await api.db('usage_events').whereLike('event_id', `${prefix}-%`).orderBy('event_id').pluck('event_id');
    expect(stored).toEqual([`${prefix}-0`, `${prefix}-3`]);
    const batch = await api.http().get(`/events/batches/${res.body.data.batchId}`).set(auth()).expect(200);
    expect(batch.body.data).toMatchObject({ status: 'completed', summary: { success: 2, failed: 3, total: 5, duplicates: 0 } });
  });

  it('when any answer is sent, then it carries nosniff and the other security headers', async () => {
    const res = await api.http().get('/health/live');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBeDefined();
    expect(res.headers['content-security-policy']).toBeDefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});

describe('client addresses and TRUST_PROXY', () => {
  it('when X-Forwarded-For changes on every failed login and no proxy is trusted, then the limit still trips', async () => {
    const limited = await startTestApi({ LOGIN_MAX_FAILURES: '5' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i += 1) {
        const res = await limited
          .http()
          .post('/auth/system-login')
          .set('X-Forwarded-For', `203.0.113.${i + 1}`)
          .send({ clientKey: tenant.clientKey, clientSecret: 'wrong-secret' });
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5)).toEqual([429, 429, 429]);
    } finally {
      await limited.close();
    }
  });

  it('when the proxy in front is trusted, then each forwarded client has its own failed-login counter', async () => {
    const proxied = await startTestApi({ LOGIN_MAX_FAILURES: '2', TRUST_PROXY: 'loopback' });
    try {
      const login = (ip: string) =>
        proxied.http().post('/auth/system-login').set('X-Forwarded-For', ip).send({ clientKey: tenant.clientKey, clientSecret: 'wrong-secret' });
      expect((await login('198.51.100.1')).status).toBe(401);
      expect((await login('198.51.100.1')).status).toBe(401);
      expect((await login('198.51.100.1')).status).toBe(429);
      expect((await login('198.51.100.2')).status).toBe(401);
    } finally {
      await proxied.close();
    }
  });
});
