import { createHash, randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { waitFor } from '../support/wait';

let api: TestApi;
let tenant: Tenant;
let entityA: string;
let entityB: string;
const metric = `storage_${randomUUID().slice(0, 8)}`;

// Hand-computed fixtures: entity A has five events over two days and two months, entity B one.
const EVENTS = [
  { entity: 'A', value: 10, timestamp: '2026-10-31T23:30:00Z', user: 'u1' },
  { entity: 'A', value: 2.5, timestamp: '2026-11-01T08:00:00Z', user: 'u2' },
  { entity: 'A', value: 7, timestamp: '2026-11-01T09:00:00Z', user: 'u1' },
  { entity: 'A', value: 4, timestamp: '2026-11-02T12:00:00Z', user: 'u3' },
  { entity: 'A', value: 1.25, timestamp: '2026-11-02T11:00:00Z', user: 'u2' },
  { entity: 'B', value: 100, timestamp: '2026-11-01T00:00:00Z', user: 'u9' },
];

async function createMeter(aggregation: string, uniqueField?: string): Promise<string> {
  const res = await api
    .http()
    .post('/meters')
    .set(bearer(tenant.adminToken))
    .send({ name: `${aggregation}-${randomUUID()}`, metric, aggregation, uniqueField });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

async function usage(meterId: string, query: Record<string, string>) {
  const res = await api.http().get(`/meters/${meterId}/usage`).query(query).set(bearer(tenant.systemToken));
  expect(res.status).toBe(200);
  return res.body.data as { value: string | null; groups: Array<{ period: string; value: string | null }> };
}

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'meters');
  entityA = (await createCustomerEntity(api, tenant)).entityId;
  entityB = (await createCustomerEntity(api, tenant)).entityId;
  const events = EVENTS.map((event) =>
    usageEvent(event.entity === 'A' ? entityA : entityB, { metric, value: event.value, timestamp: event.timestamp, metadata: { user: event.user } }),
  );
  const res = await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events });
  expect(res.body.data.summary).toMatchObject({ success: 6, failed: 0 });
});
afterAll(() => api.close());

describe('meter aggregations', () => {
  it('when the aggregation is sum, then it adds the values in the window', async () => {
    const meter = await createMeter('sum');
    expect(Number((await usage(meter, { customerEntityId: entityA })).value)).toBe(24.75);
    const november = await usage(meter, { customerEntityId: entityA, from: '2026-11-01T00:00:00Z', to: '2026-12-01T00:00:00Z' });
    expect(Number(november.value)).toBe(14.75);
    const byDay = await usage(meter, { customerEntityId: entityA, groupBy: 'day' });
    expect(byDay.groups.map((g) => [g.period, Number(g.value)])).toEqual([
      ['2026-10-31', 10],
      ['2026-11-01', 9.5],
      ['2026-11-02', 5.25],
    ]);
    const byMonth = await usage(meter, { customerEntityId: entityA, groupBy: 'month' });
    expect(byMonth.groups.map((g) => [g.period, Number(g.value)])).toEqual([
      ['2026-10-01', 10],
      ['2026-11-01', 14.75],
    ]);
    expect(Number((await usage(meter, {})).value)).toBe(124.75);
  });

  it('when the aggregation is count, then it counts the events', async () => {
    const meter = await createMeter('count');
    expect((await usage(meter, { customerEntityId: entityA })).value).toBe('5');
    expect((await usage(meter, { customerEntityId: entityB })).value).toBe('1');
  });

  it('when the aggregation is max, then it takes the largest value, and null over an empty window', async () => {
    const meter = await createMeter('max');
    expect(Number((await usage(meter, { customerEntityId: entityA })).value)).toBe(10);
    expect(Number((await usage(meter, { customerEntityId: entityA, from: '2026-11-01T00:00:00Z' })).value)).toBe(7);
    expect((await usage(meter, { customerEntityId: entityA, from: '2027-01-01T00:00:00Z' })).value).toBeNull();
  });

  it('when the aggregation is unique_count, then it counts distinct values of the metadata field', async () => {
    const meter = await createMeter('unique_count', 'user');
    expect((await usage(meter, { customerEntityId: entityA })).value).toBe('3');
    expect((await usage(meter, { customerEntityId: entityA, from: '2026-11-02T00:00:00Z' })).value).toBe('2');
  });

  it('when the aggregation is latest, then it takes the value with the latest timestamp', async () => {
    const meter = await createMeter('latest');
    expect(Number((await usage(meter, { customerEntityId: entityA })).value)).toBe(4);
    expect(Number((await usage(meter, { customerEntityId: entityA, to: '2026-11-02T00:00:00Z' })).value)).toBe(7);
  });
});

describe('meter management', () => {
  it('when a SystemUser creates or updates a meter, then 403; it may read them', async () => {
    const forbidden = await api.http().post('/meters').set(bearer(tenant.systemToken)).send({ name: 'x', metric, aggregation: 'sum' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ status: 'error', message: 'Forbidden', errors: [] });
    const meter = await createMeter('sum');
    await api.http().put(`/meters/${meter}`).set(bearer(tenant.systemToken)).send({ name: 'renamed' }).expect(403);
    const renamed = await api.http().put(`/meters/${meter}`).set(bearer(tenant.adminToken)).send({ name: `renamed-${meter}` });
    expect(renamed.body.data.name).toBe(`renamed-${meter}`);
    const list = await api.http().get('/meters').query({ search: `renamed-${meter}` }).set(bearer(tenant.systemToken)).expect(200);
    expect(list.body.data.items.map((m: { id: string }) => m.id)).toEqual([meter]);
  });

  it('when unique_count lacks its field, then 400', async () => {
    const res = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: 'u', metric, aggregation: 'unique_count' });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.uniqueField' });
  });

  it('when usage is posted to a meter, then the events take its metric through the batch path', async () => {
    const meter = await createMeter('count');
    const res = await api
      .http()
      .post(`/meters/${meter}/usage`)
      .set(bearer(tenant.systemToken))
      .send({ events: [{ CustomerEntityId: entityB, value: 1, timestamp: '2026-11-05T00:00:00Z' }] });
    expect(res.body.data.summary).toMatchObject({ success: 1, failed: 0 });
    expect((await usage(meter, { customerEntityId: entityB })).value).toBe('2');
  });

  it('when usage posted to a meter holds an event that is not an object, then that event fails alone; the Idempotency-Key names the batch for good', async () => {
    const meter = await createMeter('count');
    const key = randomUUID();
    const post = () =>
      api
        .http()
        .post(`/meters/${meter}/usage`)
        .set(bearer(tenant.systemToken))
        .set('Idempotency-Key', key)
        .send({ events: [{ CustomerEntityId: entityB, value: 1, timestamp: '2026-11-06T00:00:00Z' }, 42] });
    const first = await post();
    expect(first.status).toBe(200);
    expect(first.body.data.summary).toEqual({ success: 1, failed: 1, total: 2, duplicates: 0 });
    expect(first.body.data.failedRecords).toEqual([expect.objectContaining({ index: 1, code: '27', statusCode: 400 })]);
    // Past the replay store's 24 hours, the key still finds its batch: the event is not counted again.
    await api.db('idempotency_keys').where({ organisation_id: tenant.organisationId }).delete();
    const again = await post();
    expect(again.body.data.batchId).toBe(first.body.data.batchId);
    expect(Number((await api.db('usage_events').where({ batch_id: first.body.data.batchId }).count({ n: '*' }))[0]!.n)).toBe(1);
  });

  it('when dimension values are longer than a rollup keeps as text, then their events are counted under their digests, and a filter naming such a value finds them', async () => {
    const own = `long_${randomUUID().slice(0, 8)}`;
    const dimensions = ['model', 'a', 'b', 'c', 'd'];
    const meter = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: own, metric: own, aggregation: 'sum', groupBy: dimensions }).expect(201);
    // Five values of 3,000 to 4,000 bytes: far past the 2,704 bytes Postgres allows an index entry.
    const huge = randomUUID().repeat(112);
    const wide = '€'.repeat(1000);
    const named = '€'.repeat(255);
    const digestOf = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
    const event = (model: string, value: string) => ({ CustomerEntityId: entityB, metric: own, value, timestamp: '2026-11-03T10:00:00Z', metadata: { model, a: wide, b: wide, c: wide, d: wide } });
    const res = await api
      .http()
      .post('/events/batch')
      .set(bearer(tenant.systemToken))
      .send({ events: [event(huge, '1.5'), event(huge, '2'), event('short', '4'), event(named, '8')] });
    expect([res.status, res.body.data.summary]).toEqual([200, { success: 4, failed: 0, total: 4, duplicates: 0 }]);

    const rows = async (extra: string) => {
      const read = await api.http().get(`/meters/${meter.body.data.id}/query?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z&windowSize=month&groupBy=model&groupBy=a&timezone=UTC${extra}`).set(bearer(tenant.systemToken));
      expect(read.status).toBe(200);
      return (read.body.data.rows as Array<{ groups: Record<string, string>; value: string }>).map((row) => [row.groups.model, row.groups.a, row.value]);
    };
    expect(new Set(await rows(''))).toEqual(new Set([[digestOf(huge), digestOf(wide), '3.5'], ['short', digestOf(wide), '4'], [digestOf(named), digestOf(wide), '8']]));
    expect(await rows(`&filter.model=${encodeURIComponent(named)}`)).toEqual([[digestOf(named), digestOf(wide), '8']]);
  });

  it('when an event falls on the last day of the year 9999, then it is counted, corrected, deleted and filled into a new meter like any other', async () => {
    const own = `far_${randomUUID().slice(0, 8)}`;
    const system = bearer(tenant.systemToken);
    const meter = (await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: own, metric: own, aggregation: 'sum', groupBy: ['region'] }).expect(201)).body.data.id as string;
    // A usage counter (of a metered entitlement) and a usage alert on the customer, in a zone ahead of UTC,
    // where the event's day is already the year 10000; the period of the alert ends past the calendar.
    const { customerId, entityId } = await createCustomerEntity(api, tenant);
    await api.http().post('/features').set(bearer(tenant.adminToken)).send({ key: own, name: own, meterId: meter }).expect(201);
    await api.http().post(`/customers/${customerId}/entitlements`).set(bearer(tenant.systemToken)).send({ featureKey: own, type: 'metered', limit: 100, usagePeriod: 'month' }).expect(201);
    await api.http().post('/alerts').set(bearer(tenant.adminToken)).send({ name: own, scope: { customerId }, metric: 'usage', meterId: meter, thresholds: [1], recurring: 'period' }).expect(201);
    const counter = await api.db('usage_counters').where({ organisation_id: tenant.organisationId, customer_id: customerId }).first('id', 'time_zone');
    await api.db('usage_counters').where({ id: counter.id }).update({ time_zone: 'Pacific/Kiritimati' });
    const event = (value: number, timestamp: string) => ({ CustomerEntityId: entityId, metric: own, value, timestamp, metadata: { region: 'eu' } });
    const sent = await api.http().post('/events/batch').set(system).send({ events: [event(3, '9999-12-31T23:59:59Z'), event(4, '9999-12-31T00:00:00Z'), event(5, '2026-11-03T10:00:00Z')] }).expect(200);
    expect(sent.body.data.summary).toMatchObject({ success: 3, failed: 0 });
    // The very last instant no window can hold (a query's exclusive `to` names no later one): refused.
    const beyond = await api.http().post('/events/batch').set(system).send({ events: [event(1, '9999-12-31T23:59:59.999Z')] }).expect(200);
    expect(beyond.body.data.summary).toMatchObject({ success: 0, failed: 1 });
    expect(JSON.stringify(beyond.body.data)).toContain('must be before 9999-12-31T23:59:59.999Z');
    const [last, first] = (await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric: own }).orderBy('timestamp', 'desc').select('id')).map((row: { id: string }) => row.id);
    const lastDay = async () => {
      const read = await api.http().get(`/meters/${meter}/query?from=9999-12-31T00:00:00Z&to=9999-12-31T23:45:00Z&windowSize=hour&groupBy=region&timezone=UTC`).set(system).expect(200);
      return (read.body.data.rows as Array<{ value: string }>).map((row) => row.value);
    };
    expect(await lastDay()).toEqual(['4']);

    // Its bucket ends at 10000-01-01T00:00:00Z, an instant Postgres reads only when written plainly.
    await api.http().put(`/usage/${last}`).set(system).send({ value: 30 }).expect(200);
    await api.http().put(`/usage/${first}`).set(system).send({ timestamp: '9999-12-31T23:50:00Z' }).expect(200);
    await api.http().delete(`/usage/${last}`).set(system).expect(200);
    const filled = (await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: `${own} again`, metric: own, aggregation: 'sum' }).expect(201)).body.data.id as string;
    const deadline = Date.now() + 30_000;
    let backfill = (await api.http().get(`/meters/${filled}`).set(system).expect(200)).body.data.backfill;
    while (backfill && backfill.status !== 'completed' && backfill.status !== 'failed' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      backfill = (await api.http().get(`/meters/${filled}`).set(system).expect(200)).body.data.backfill;
    }
    expect(backfill?.status ?? 'completed').toBe('completed');
    // The fill holds both events left: 5 in 2026, and 4 in the last quarter hour of 9999.
    const [held] = await api.db('meter_rollups').where({ meter_id: filled }).select(api.db.raw('sum(sum)::float8 as total, max(bucket_start) as last'));
    expect([held.total, new Date(held.last).toISOString()]).toEqual([9, '9999-12-31T23:45:00.000Z']);
    // The counter holds the events left by the days Kiritimati reads them on: the last one in the year 10000.
    const days = await api.db('usage_counter_days').where({ counter_id: counter.id }).orderByRaw('usage_counter_days.day').select(api.db.raw('day::text as day'), api.db.raw('value::float8 as value'));
    expect(days).toEqual([{ day: '2026-11-04', value: 5 }, { day: '10000-01-01', value: 4 }]);
    // And the relay handed on what the changes announced, the alert's events included: nothing holds it up.
    await waitFor(async () => ((await api.db('webhook_events').where({ organisation_id: tenant.organisationId }).whereIn('type', ['usage.ingested', 'usage.corrected']).whereNull('dispatched_at').first('id')) ? undefined : true), 30_000);
  });

  it('when usage is read by day in CET, then its days are those of Europe/Brussels, summer time included, not a fixed UTC+01:00', async () => {
    const own = `cet_${randomUUID().slice(0, 8)}`;
    const system = bearer(tenant.systemToken);
    const meter = (await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: own, metric: own, aggregation: 'sum' }).expect(201)).body.data.id as string;
    const { entityId } = await createCustomerEntity(api, tenant);
    // 21:30Z on 1 July is 23:30 in Brussels (still the 1st); 22:30Z is 00:30 on the 2nd, where UTC+01:00 reads 23:30 on the 1st.
    const event = (value: number, timestamp: string) => ({ CustomerEntityId: entityId, metric: own, value, timestamp });
    await api.http().post('/events/batch').set(system).send({ events: [event(1, '2026-07-01T21:30:00Z'), event(2, '2026-07-01T22:30:00Z')] }).expect(200);
    const read = await api.http().get(`/meters/${meter}/query?from=2026-07-01T00:00:00%2B02:00&to=2026-07-03T00:00:00%2B02:00&windowSize=day&timezone=CET`).set(system).expect(200);
    expect(read.body.data.timezone).toBe('Europe/Brussels');
    expect((read.body.data.rows as Array<{ windowStart: string; windowEnd: string; value: string }>).map(({ windowStart, windowEnd, value }) => ({ windowStart, windowEnd, value }))).toEqual([
      { windowStart: '2026-06-30T22:00:00.000Z', windowEnd: '2026-07-01T22:00:00.000Z', value: '1' },
      { windowStart: '2026-07-01T22:00:00.000Z', windowEnd: '2026-07-02T22:00:00.000Z', value: '2' },
    ]);
  });

  it('when a query, a plan or a second meter names what is not there or is taken, then the error names the parameter or property', async () => {
    const meter = await createMeter('sum');
    const query = (extra: string) => api.http().get(`/meters/${meter}/query?from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z${extra}`).set(bearer(tenant.systemToken));
    const customer = await query('&customerId=cus_nowhere').expect(404);
    expect(customer.body.errors).toEqual([{ code: 1002, path: 'query.customerId', message: 'Customer not found' }]);
    const entity = await query('&entityId=ent_nowhere').expect(404);
    expect(entity.body.errors).toEqual([{ code: 1002, path: 'query.entityId', message: 'Entity not found' }]);
    const plan = await api.http().post('/billing/plans').set(bearer(tenant.adminToken)).send({ name: `Nowhere ${randomUUID()}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Tokens', meterId: 'mtr_nowhere', pricingModel: 'per_unit', unitPrice: '1' }] }).expect(404);
    expect(plan.body.errors).toEqual([{ code: 1002, path: 'body.items.0.meterId', message: 'Meter not found' }]);
    const name = (await api.http().get(`/meters/${meter}`).set(bearer(tenant.systemToken)).expect(200)).body.data.name as string;
    const twin = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name, metric, aggregation: 'sum' }).expect(409);
    expect(twin.body.errors).toEqual([{ code: 1003, path: 'body.name', message: 'A meter with this name exists' }]);
  });

  it("when another organisation asks for a meter, then 404", async () => {
    const meter = await createMeter('sum');
    const other = await createTenant(api, 'meters-other');
    await api.http().get(`/meters/${meter}`).set(bearer(other.systemToken)).expect(404);
    await api.http().get(`/meters/${meter}/usage`).set(bearer(other.systemToken)).expect(404);
    // Nor are its customer entities found through a meter of its own.
    const theirs = await api.http().post('/meters').set(bearer(other.adminToken)).send({ name: `theirs-${randomUUID()}`, metric, aggregation: 'sum' }).expect(201);
    for (const unknown of [entityA, 'ent_unknown']) {
      const res = await api.http().get(`/meters/${theirs.body.data.id}/usage`).query({ customerEntityId: unknown }).set(bearer(other.systemToken)).expect(404);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'query.customerEntityId', message: 'Entity not found' })]);
    }
  });
});
