import { randomUUID } from 'node:crypto';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

/**
 * The contract is strict and says so (docs/api-contract.md, "Strictness"): a body takes only the
 * properties it names, a missing property is "required" by its path, and a value of one kind is checked by
 * one validator wherever it is taken, a usage batch's events included.
 */
let api: TestApi;
let tenant: Tenant;
let entityId: string;

const UNKNOWN = 'is not a property this request takes';
const REQUIRED = 'is required';
const NOT_A_USAGE_VALUE = 'must be a decimal number with at most 20 digits before the point and 10 after it';

beforeAll(async () => {
  // Every operation of the document is called below: the per-token limit stays out of the way.
  api = await startTestApi({ RATE_LIMIT_PER_MINUTE: '1000000' });
  tenant = await createTenant(api, 'strictness');
  ({ entityId } = await createCustomerEntity(api, tenant));
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const postBatch = (events: unknown[]) => api.http().post('/events/batch').set(system()).send({ events }).expect(200);
const eventsWithPrefix = async (prefix: string) =>
  api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}%`).orderBy('event_id').pluck('event_id');

describe('unknown properties', () => {
  it('when a customer is created with a misspelt property, then 400 names body.emial and nothing is stored', async () => {
    const name = `Typo Co ${randomUUID()}`;
    const res = await api.http().post('/customers').set(system()).send({ name, emial: 'x@typo.test' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 'error', message: 'Validation failed', errors: [{ code: 1001, path: 'body.emial', message: UNKNOWN }] });
    expect(await api.db('customers').where({ organisation_id: tenant.organisationId, name }).count({ n: '*' })).toEqual([{ n: '0' }]);
  });

  it('when one event of a batch has a property an event does not take, then that event alone fails with "27" naming it', async () => {
    const prefix = randomUUID();
    const res = await postBatch([
      usageEvent(entityId, { eventId: `${prefix}-0` }),
      { ...usageEvent(entityId, { eventId: `${prefix}-1` }), emial: 'x@typo.test' },
      usageEvent(entityId, { eventId: `${prefix}-2` }),
    ]);
    expect(res.body.data.summary).toEqual({ success: 2, failed: 1, total: 3, duplicates: 0 });
    expect(res.body.data.failedRecords).toEqual([{ index: 1, code: '27', statusCode: 400, error: `emial ${UNKNOWN}` }]);
    expect(await eventsWithPrefix(prefix)).toEqual([`${prefix}-0`, `${prefix}-2`]);
  });

  it('when a single event has a property an event does not take, then 400 names it by its path', async () => {
    const res = await api.http().post('/events').set(system()).send({ ...usageEvent(entityId), emial: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ code: 1001, path: 'body.emial', message: UNKNOWN }]);
  });
});

describe('unknown query parameters', () => {
  it('when a list is asked with a misspelt filter, then 400 names query.contractid and the parameters the route takes, where a right one answers', async () => {
    const res = await api.http().get('/invoices').query({ contractid: 'con_x', limit: 5 }).set(system());
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ code: 1001, path: 'query.contractid', message: expect.stringMatching(/^is not a query parameter this request takes; it takes .*\bcontractId\b.*\blimit\b/) }]);
    await api.http().get('/invoices').query({ contractId: 'con_x', limit: 5 }).set(system()).expect(200);
  });

  it('when any operation of the document is sent a query parameter it does not list, then it answers 400 naming it by its path', async () => {
    const document = (await api.http().get('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const admin = bearer(tenant.adminToken);
    const wrong: unknown[] = [];
    let checked = 0;
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const method of Object.keys(operations)) {
        const url = route.replace(/\{(\w+)\}/g, 'id_strict');
        const res = await api.http()[method as 'post' | 'put' | 'get' | 'delete'](url).query({ sortBy: 'name' }).set(admin);
        const item = (res.body.errors ?? []).find((one: { path?: string }) => one.path === 'query.sortBy');
        if (res.status !== 400 || !item) wrong.push({ operation: `${method.toUpperCase()} ${route}`, status: res.status, errors: res.body.errors });
        checked += 1;
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThanOrEqual(100);
  });
});

describe('one validator per value', () => {
  it('when a usage value is written with an exponent ("1e3"), then POST /events and POST /usage refuse it by its path, and in a batch that event alone fails with the same reason', async () => {
    for (const route of ['/events', '/usage']) {
      const res = await api.http().post(route).set(system()).send(usageEvent(entityId, { value: '1e3' }));
      expect({ route, status: res.status, errors: res.body.errors }).toEqual({ route, status: 400, errors: [{ code: 1001, path: 'body.value', message: NOT_A_USAGE_VALUE }] });
    }
    const prefix = randomUUID();
    for (const route of ['/events/batch', '/usage/bulk']) {
      const res = await api
        .http()
        .post(route)
        .set(system())
        .send({ events: [usageEvent(entityId, { eventId: `${prefix}${route}-0`, value: '1e3' }), usageEvent(entityId, { eventId: `${prefix}${route}-1`, value: '1000' })] })
        .expect(200);
      expect({ route, failedRecords: res.body.data.failedRecords }).toEqual({ route, failedRecords: [{ index: 0, code: '27', statusCode: 400, error: `value ${NOT_A_USAGE_VALUE}` }] });
    }
    expect(await eventsWithPrefix(prefix)).toEqual([`${prefix}/events/batch-1`, `${prefix}/usage/bulk-1`]);
    const values = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}%`).pluck('value');
    expect(values.map(Number)).toEqual([1000, 1000]);
  });

  it.each([
    ['a timestamp without seconds', { timestamp: '2026-11-01T10:00Z' }, 'timestamp', 'must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['a timestamp whose zone has no colon', { timestamp: '2026-11-01T10:00:00+0200' }, 'timestamp', 'must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['an empty metric', { metric: '' }, 'metric', 'must not be blank'],
    ['a blank metric, which no meter can name', { metric: ' \t ' }, 'metric', 'must not be blank'],
    ['metadata that is an array', { metadata: [1] }, 'metadata', 'Invalid input: expected record, received array'],
  ])('when an event has %s, then POST /events and the batch refuse it alike', async (_label, change, field, message) => {
    const event = { ...usageEvent(entityId), ...change };
    const single = await api.http().post('/events').set(system()).send(event);
    expect({ status: single.status, errors: single.body.errors }).toEqual({ status: 400, errors: [{ code: 1001, path: `body.${field}`, message }] });
    const batch = await postBatch([event]);
    expect(batch.body.data.failedRecords).toEqual([{ index: 0, code: '27', statusCode: 400, error: `${field} ${message}` }]);
  });
});

describe('metrics', () => {
  it('when an event names its metric with spaces around it, then it is stored under the metric a meter names, trimmed', async () => {
    const eventId = `padded-${randomUUID()}`;
    const res = await postBatch([{ ...usageEvent(entityId), metric: '  api_calls\t', eventId }]);
    expect(res.body.data.summary).toMatchObject({ success: 1, failed: 0 });
    expect(await api.db('usage_events').where({ organisation_id: tenant.organisationId, event_id: eventId }).pluck('metric')).toEqual(['api_calls']);
  });
});

describe('missing properties', () => {
  it('when mark-paid has no paidDate, or a status update to paid has none, then 400 says body.paidDate is required', async () => {
    const markPaid = await api.http().post('/invoices/inv_any/mark-paid').set(system()).send({});
    expect(markPaid.status).toBe(400);
    expect(markPaid.body.errors).toEqual([{ code: 1001, path: 'body.paidDate', message: REQUIRED }]);
    const update = await api.http().put('/invoices/inv_any').set(system()).send({ status: 'paid' });
    expect(update.body.errors).toEqual([{ code: 1001, path: 'body.paidDate', message: REQUIRED }]);
  });

  it('when a single usage event lacks its fields, then each is required by its path; in a batch, the event fails saying so', async () => {
    const res = await api.http().post('/events').set(system()).send({ metric: 'api_calls' });
    expect(res.body.errors).toEqual([
      { code: 1001, path: 'body.CustomerEntityId', message: REQUIRED },
      { code: 1001, path: 'body.value', message: REQUIRED },
      { code: 1001, path: 'body.timestamp', message: REQUIRED },
    ]);
    const batch = await postBatch([{ CustomerEntityId: entityId, metric: 'api_calls', value: 1 }]);
    expect(batch.body.data.failedRecords).toEqual([{ index: 0, code: '27', statusCode: 400, error: `timestamp ${REQUIRED}` }]);
  });

  it('when any operation of the document is sent without its required body properties and query parameters, then each one answers "is required" by its path', async () => {
    type Operation = {
      parameters?: Array<{ name: string; in: string; required?: boolean; schema?: { enum?: string[] } }>;
      requestBody?: { content: Record<string, { schema?: { required?: string[] } }> };
    };
    const document = (await api.http().get('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, Operation>> };
    const admin = bearer(tenant.adminToken);
    const checked: string[] = [];
    const wrong: unknown[] = [];
    for (const [route, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const body = operation.requestBody?.content['application/json']?.schema?.required ?? [];
        const query = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query' && parameter.required).map((parameter) => parameter.name);
        if (body.length === 0 && query.length === 0) continue;
        // A path parameter that is a choice takes its first; an id names nothing, which the body check precedes.
        const url = route.replace(/\{(\w+)\}/g, (_match, name: string) => operation.parameters?.find((parameter) => parameter.name === name)?.schema?.enum?.[0] ?? 'id_strict');
        const call = api.http()[method as 'post' | 'put' | 'get' | 'delete'](url).set(admin);
        const res = operation.requestBody?.content['application/json'] ? await call.send({}) : await call;
        const expected = [...query.map((name) => `query.${name}`), ...body.map((name) => `body.${name}`)].map((at) => ({ code: 1001, path: at, message: REQUIRED }));
        const got = (res.body.errors ?? []).filter((item: { path?: string }) => expected.some((one) => one.path === item.path));
        if (res.status !== 400 || JSON.stringify(got) !== JSON.stringify(expected)) wrong.push({ operation: `${method.toUpperCase()} ${route}`, status: res.status, errors: res.body.errors });
        checked.push(`${method.toUpperCase()} ${route}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(checked.length).toBeGreaterThanOrEqual(45);
    expect(checked).toEqual(expect.arrayContaining(['POST /customers', 'POST /invoices/{id}/mark-paid', 'POST /events', 'POST /auth/system-login', 'GET /revenue/summary']));
  });
});
