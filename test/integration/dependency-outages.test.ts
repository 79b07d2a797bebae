import { randomUUID } from 'node:crypto';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { waitFor } from '../support/wait';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';

jest.setTimeout(300_000);

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;
let entityId: string;

/** The request's answer and how long it took. */
async function timed<T>(request: PromiseLike<T>): Promise<{ res: T; ms: number }> {
  const started = Date.now();
  const res = await request;
  return { res, ms: Date.now() - started };
}

const auth = () => bearer(tenant.systemToken);
const eventsOf = (prefix: string) =>
  api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereLike('event_id', `${prefix}-%`).count({ n: '*' }).then((rows) => Number(rows[0]!.n));

/**
 * Temporal back on the same port with its state, a worker polling it again, and the API's own client
 * reconnected: /health answers 200, as a client honouring Retry-After would find before it retries.
 */
async function restoreTemporal(): Promise<void> {
  await stack.startTemporal();
  await stack.killWorker();
  await stack.startWorker();
  await waitFor(async () => ((await api.http().get('/health')).status === 200 ? true : undefined), 60_000);
}

beforeAll(async () => {
  stack = await startBreakableStack('outage');
  api = stack.api;
  tenant = await createTenant(api, 'outage');
  ({ entityId } = await createCustomerEntity(api, tenant));
});

afterAll(() => stack?.close());

describe('while Temporal is down', () => {
  afterEach(async () => {
    const { process: child } = stack.temporal();
    if (child.exitCode === null && child.signalCode === null) return;
    await restoreTemporal();
  });

  it('when a batch is submitted, then 503 with Retry-After at once, nothing is ingested, and the same request later goes through', async () => {
    await stack.killTemporal();
    const prefix = randomUUID();
    const body = { events: Array.from({ length: 20 }, (_, i) => usageEvent(entityId, { eventId: `${prefix}-${i}` })) };

    const { res, ms } = await timed(api.http().post('/events/batch').set(auth()).set('Idempotency-Key', prefix).send(body));

    expect(ms).toBeLessThan(5_000);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toMatchObject({ status: 'error', errors: [{ code: 1006, path: 'temporal' }] });
    const batch = await api.db('usage_batches').where({ organisation_id: tenant.organisationId, idempotency_key: prefix }).first();
    expect(batch.status).toBe('abandoned');
    expect(await eventsOf(prefix)).toBe(0);

    await restoreTemporal();
    // A worker just restarted may take longer than a submit waits for its first batch: that is a 202 (the
    // batch under way), and the client honouring it sends the same request again until it has the outcomes.
    const retried = await waitFor(async () => {
      const res = await api.http().post('/events/batch').set(auth()).set('Idempotency-Key', prefix).send(body);
      return res.status === 202 ? undefined : res;
    }, 60_000, 1_000);
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({ batchId: batch.id, summary: { success: 20, failed: 0, total: 20, duplicates: 0 } });
    expect(await eventsOf(prefix)).toBe(20);
  });

  it('when an invoice is raised, then 503 at once; a draft created meanwhile is kept whole and raises once Temporal is back', async () => {
    const fixture = await createBillingFixture(api, tenant);
    const before = await api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId)).expect(201);
    await stack.killTemporal();

    const raise = await timed(api.http().post(`/invoices/${before.body.data.id}/raise`).set(auth()).send({}));
    expect(raise.ms).toBeLessThan(5_000);
    expect(raise.res.status).toBe(503);
    expect(raise.res.body.errors[0]).toMatchObject({ code: 1006 });

    const created = await timed(api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId)));
    expect(created.ms).toBeLessThan(10_000);
    expect(created.res.status).toBe(201);
    const reads = await timed(api.http().get('/customers').set(auth()));
    expect(reads.res.status).toBe(200);

    await restoreTemporal();
    const raised = await api.http().post(`/invoices/${created.res.body.data.id}/raise`).set(auth()).send({});
    expect(raised.status).toBe(200);
    expect(raised.body.data.status).toBe('raised');
  });

  it('when /health is asked, then it answers within a second naming Temporal', async () => {
    await stack.killTemporal();
    const { res, ms } = await timed(api.http().get('/health'));
    expect(ms).toBeLessThan(1_000);
    expect(res.status).toBe(503);
    expect(res.body.errors.map((item: { path: string }) => item.path)).toContain('temporal');
  });
});

describe('while Postgres is down', () => {
  afterEach(() => stack.proxy.restore());

  it('when anything is read or written, then 503 with Retry-After within seconds, and the API serves again once it is back', async () => {
    stack.proxy.cut();
    const read = await timed(api.http().get('/customers').set(auth()));
    expect(read.ms).toBeLessThan(8_000);
    expect(read.res.status).toBe(503);
    expect(read.res.headers['retry-after']).toBe('5');
    expect(read.res.body).toMatchObject({ status: 'error', errors: [{ code: 1006, path: 'postgres' }] });

    const write = await timed(api.http().post('/customers').set(auth()).send({ name: 'During outage', currency: 'USD' }));
    expect(write.ms).toBeLessThan(8_000);
    expect(write.res.status).toBe(503);

    const health = await timed(api.http().get('/health'));
    expect(health.ms).toBeLessThan(1_000);
    expect(health.res.status).toBe(503);

    stack.proxy.restore();
    await waitFor(async () => ((await api.http().get('/customers').set(auth())).status === 200 ? true : undefined), 30_000);
  });
});

describe('while the worker is down', () => {
  afterEach(async () => {
    if (!stack.worker()) await stack.startWorker();
  });

  it('when a batch, or one event, is submitted, then 202 with its batch id within seconds, and it completes once a worker is back; a retry of the event with its key is the same batch', async () => {
    await stack.killWorker();
    const prefix = randomUUID();
    const body = { events: Array.from({ length: 30 }, (_, i) => usageEvent(entityId, { eventId: `${prefix}-${i}` })) };

    const { res, ms } = await timed(api.http().post('/events/batch').set(auth()).send(body));

    expect(ms).toBeLessThan(10_000);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'processing', total: 30 });
    const batchId = res.body.data.id as string;

    // One event without an eventId: a 503 would invite a retry that counts it twice; the 202 names its batch,
    // and the retry with the same key (a 202 is not a final answer, so it runs again) finds that batch.
    const key = randomUUID();
    const single = usageEvent(entityId, { metadata: { outage: prefix } });
    const one = await api.http().post('/events').set(auth()).set('Idempotency-Key', key).send(single);
    expect([one.status, one.body.data]).toEqual([202, expect.objectContaining({ status: 'processing', total: 1 })]);
    const again = await api.http().post('/events').set(auth()).set('Idempotency-Key', key).send(single);
    expect([again.status, again.body.data.id]).toEqual([202, one.body.data.id]);

    await stack.startWorker();
    const done = await waitFor(async () => {
      const read = await api.http().get(`/events/batches/${batchId}`).set(auth());
      return read.body.data.status === 'completed' ? read.body.data : undefined;
    }, 120_000);
    expect(done.summary).toEqual({ success: 30, failed: 0, total: 30, duplicates: 0 });
    expect(await eventsOf(prefix)).toBe(30);
    await waitFor(async () => ((await api.http().get(`/events/batches/${one.body.data.id}`).set(auth())).body.data.status === 'completed' ? true : undefined), 120_000);
    const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId }).whereRaw("metadata->>'outage' = ?", [prefix]).count({ n: '*' });
    expect(Number(stored[0]!.n)).toBe(1);
  });

  it('when Postgres goes away after a batch was stored and handed over, then 202 with the batch as stored, never a 503, and it is written once both are back', async () => {
    await stack.killWorker();
    const prefix = randomUUID();
    const body = { events: Array.from({ length: 40 }, (_, i) => usageEvent(entityId, { eventId: `${prefix}-${i}` })) };
    const batches = () => api.db('usage_batches').where({ organisation_id: tenant.organisationId }).count({ n: '*' }).then((rows) => Number(rows[0]!.n));
    const before = await batches();
    const answer = api.http().post('/events/batch').set(auth()).send(body).then((res) => res);
    // Stored, then waiting for a worker to take it: Postgres goes now, before the answer is read from it.
    await waitFor(async () => ((await batches()) > before ? true : undefined), 10_000);
    stack.proxy.cut();
    let res: Awaited<typeof answer>;
    try {
      res = await answer;
    } finally {
      stack.proxy.restore();
    }
    expect([res.status, res.body.data]).toEqual([202, expect.objectContaining({ status: 'processing', total: 40, summary: null })]);

    await stack.startWorker();
    const done = await waitFor(async () => {
      const read = await api.http().get(`/events/batches/${res.body.data.id}`).set(auth());
      return read.body.data.status === 'completed' ? read.body.data : undefined;
    }, 120_000);
    expect(done.summary).toEqual({ success: 40, failed: 0, total: 40, duplicates: 0 });
    expect(await eventsOf(prefix)).toBe(40);
  });

  it('when the ingestion workflow holding a batch that waits for a worker is terminated from the Temporal UI, then reading the batch marks it failed with the reason, not processing forever', async () => {
    await stack.killWorker();
    const prefix = randomUUID();
    const body = { events: Array.from({ length: 5 }, (_, i) => usageEvent(entityId, { eventId: `${prefix}-${i}` })) };
    const res = await api.http().post('/events/batch').set(auth()).send(body);
    expect(res.status).toBe(202);
    const batchId = res.body.data.id as string;

    await api.temporal.client.workflow.getHandle(`usage-ingestion:${tenant.organisationId}`).terminate('operator gave up');
    const read = await timed(api.http().get(`/events/batches/${batchId}`).set(auth()));

    expect(read.ms).toBeLessThan(5_000);
    expect(read.res.body.data).toMatchObject({ id: batchId, status: 'failed', error: expect.stringMatching(/terminated/) });
    expect(await eventsOf(prefix)).toBe(0);
  });
});
