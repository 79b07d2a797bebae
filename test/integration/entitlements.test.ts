import { randomUUID } from 'node:crypto';
import { createDb } from '../../src/db/knex';
import { createEntitlementPeriodService, createEntitlementService } from '../../src/modules/entitlements';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { eventually, startWebhookReceiver } from './support/webhook-receiver';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
const admin = () => bearer(tenant.adminToken);
const system = () => bearer(tenant.systemToken);

const DAY_MS = 86_400_000;
let metric: string;
let meterId: string;

async function customerWithEntity(label: string) {
  const customer = await api.http().post('/customers').set(system()).send({ name: `${label} ${randomUUID()}`, currency: 'EUR' }).expect(201);
  const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: label, customerId: customer.body.data.id }).expect(201);
  return { customerId: customer.body.data.id as string, entityId: entity.body.data.id as string };
}

/** `count` calls of the entity at `timestamp`, in batches of at most 1,000, each answered 200. */
async function call(entityId: string, count: number, timestamp = new Date().toISOString(), metadata: Record<string, string> = {}) {
  for (let sent = 0; sent < count; sent += 1000) {
    const events = Array.from({ length: Math.min(1000, count - sent) }, () => ({ CustomerEntityId: entityId, metric, value: 1, timestamp, metadata }));
    const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
    expect(res.body.data.summary).toMatchObject({ success: events.length, failed: 0 });
  }
}

async function valueOf(customerId: string, featureKey: string) {
  const res = await api.http().get(`/customers/${customerId}/entitlements/${featureKey}/value`).set(system()).expect(200);
  return res.body.data;
}

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'entitlements');
  other = await createTenant(api, 'entitlements-other');
  receiver = await startWebhookReceiver();
  await api.http().post('/webhooks/endpoints').set(admin()).send({ url: receiver.url('/entitlements'), eventTypes: ['entitlement.exhausted'] }).expect(201);
  metric = `api_calls_${randomUUID().slice(0, 8)}`;
  meterId = (await api.http().post('/meters').set(admin()).send({ name: metric, metric, aggregation: 'count' }).expect(201)).body.data.id;
  await api.http().post('/features').set(admin()).send({ key: 'api', name: 'API calls', meterId }).expect(201);
});
afterAll(async () => {
  await receiver.close();
  await api.close();
});

describe('a metered entitlement of 1,000 calls a month with a grant of 500', () => {
  it('uses the limit, then the grant, then counts overage: a hard limit closes access, a soft one does not', async () => {
    const hard = await customerWithEntity('hard');
    const soft = await customerWithEntity('soft');
    for (const [who, isSoftLimit] of [[hard, false], [soft, true]] as const) {
      const created = await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 1000, usagePeriod: 'month', isSoftLimit }).expect(201);
      expect(created.body.data).toMatchObject({ featureKey: 'api', type: 'metered', usage: '0', limit: '1000', balance: '1000', hasAccess: true });
      await api.http().post(`/customers/${who.customerId}/entitlements/api/grants`).set(system()).send({ amount: 500, expiresAt: new Date(Date.now() + 30 * DAY_MS).toISOString() }).expect(201);
    }

    await call(hard.entityId, 1200);
    // Consistent with ingestion: the batch answered 200, so its events count.
    expect(await valueOf(hard.customerId, 'api')).toMatchObject({ hasAccess: true, usage: '1200', balance: '300', overage: '0' });
    const grants = await api.http().get(`/customers/${hard.customerId}/entitlements/api/grants`).set(system()).expect(200);
    expect(grants.body.data.items).toEqual([expect.objectContaining({ amount: '500', remaining: '300' })]);

    await call(hard.entityId, 400);
    expect(await valueOf(hard.customerId, 'api')).toMatchObject({ hasAccess: false, usage: '1600', balance: '0', overage: '100' });
    await call(soft.entityId, 1600);
    expect(await valueOf(soft.customerId, 'api')).toMatchObject({ hasAccess: true, usage: '1600', balance: '0', overage: '100', isSoftLimit: true });

    // Each exhaustion is announced once, with where the entitlement stood.
    const announced = await eventually(() => {
      const bodies = receiver.received('/entitlements').map((entry) => JSON.parse(entry.body));
      return bodies.length >= 2 ? bodies : undefined;
    });
    expect(announced.map((event) => event.data.customerId).sort()).toEqual([hard.customerId, soft.customerId].sort());
    expect(announced.find((event) => event.data.customerId === hard.customerId).data).toMatchObject({ featureKey: 'api', limit: '1000', balance: '0' });
    await call(hard.entityId, 10);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.received('/entitlements')).toHaveLength(2);
  });

  it('when an entitlement is made on a period whose usage already used its limit up, then the exhaustion is announced at once, and once', async () => {
    const who = await customerWithEntity('late-made');
    await call(who.entityId, 12);
    // The relay has handed that usage on already: nothing but the creation can announce it.
    await eventually(async () => ((await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'usage.ingested' }).whereNull('dispatched_at').first()) === undefined ? true : undefined));
    const made = await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 10, usagePeriod: 'month' }).expect(201);
    expect(made.body.data).toMatchObject({ usage: '12', balance: '0', overage: '2', hasAccess: false });
    const announced = await eventually(() => receiver.received('/entitlements').map((entry) => JSON.parse(entry.body)).find((event) => event.data.customerId === who.customerId));
    expect(announced).toMatchObject({ type: 'entitlement.exhausted', data: { featureKey: 'api', usage: '12', limit: '10', balance: '0' } });
    await call(who.entityId, 1);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(receiver.received('/entitlements').filter((entry) => JSON.parse(entry.body).data.customerId === who.customerId)).toHaveLength(1);
  });

  it('when stored events are corrected into the period and use it up, then the exhaustion is announced as if they had arrived so', async () => {
    const who = await customerWithEntity('corrected');
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 10, usagePeriod: 'month' }).expect(201);
    await call(who.entityId, 5);
    const earlier = new Date(Date.now() - 40 * DAY_MS).toISOString();
    await call(who.entityId, 6, earlier);
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '5', hasAccess: true });

    const moved = await api.db('usage_events').where({ organisation_id: tenant.organisationId, customer_entity_id: who.entityId }).where('timestamp', '<=', earlier).pluck('id');
    expect(moved).toHaveLength(6);
    for (const id of moved) await api.http().put(`/usage/${id}`).set(system()).send({ timestamp: new Date().toISOString() }).expect(200);
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '11', balance: '0', hasAccess: false });
    const announced = await eventually(() => receiver.received('/entitlements').map((entry) => JSON.parse(entry.body)).find((event) => event.data.customerId === who.customerId));
    expect(announced).toMatchObject({ type: 'entitlement.exhausted', data: { featureKey: 'api', limit: '10', balance: '0' } });
  });

  it('when the grant expires, the balance drops by what it had left', async () => {
    const who = await customerWithEntity('expiring');
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 1000, usagePeriod: 'month' }).expect(201);
    const expiresAt = new Date(Date.now() + 4000);
    await api.http().post(`/customers/${who.customerId}/entitlements/api/grants`).set(system()).send({ amount: 500, effectiveAt: new Date(Date.now() - DAY_MS).toISOString(), expiresAt: expiresAt.toISOString() }).expect(201);
    await call(who.entityId, 1200);
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '1200', balance: '300', hasAccess: true });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt.getTime() - Date.now() + 200)));
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '1200', balance: '0', hasAccess: false, overage: '0' });
  });

  it('a new period resets the limit, and what grants gave earlier stays given', async () => {
    const who = await customerWithEntity('daily');
    // Daily periods from three days back: yesterday's usage went beyond the limit and took the whole grant.
    const anchor = new Date(Date.now() - 3 * DAY_MS).toISOString();
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 1000, usagePeriod: 'day', anchor }).expect(201);
    await api.http().post(`/customers/${who.customerId}/entitlements/api/grants`).set(system()).send({ amount: 500, effectiveAt: anchor }).expect(201);
    const value = await valueOf(who.customerId, 'api');
    const yesterday = new Date(Date.parse(value.periodStart) - DAY_MS / 2).toISOString();
    await call(who.entityId, 1600, yesterday);
    await call(who.entityId, 200);
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '200', balance: '800', overage: '0', hasAccess: true });
    // The list reads the counter's sums in SQL, the check its days with the entitlement: the same value.
    const listed = (await api.http().get(`/customers/${who.customerId}/entitlements`).set(system()).expect(200)).body.data.items[0];
    expect(listed).toMatchObject(await valueOf(who.customerId, 'api'));
    // Tomorrow, as the same service reads it: nothing used yet, the limit back in full.
    const tomorrow = new Date(Date.parse(value.periodEnd) + 1000);
    const service = createEntitlementService(api.db);
    expect(await service.value(tenant.organisationId, who.customerId, 'api', tomorrow)).toMatchObject({ usage: '0', balance: '1000', periodStart: value.periodEnd });

    // The period workflow's step announces the next period once, however often it is asked.
    const entitlement = (await api.http().get(`/customers/${who.customerId}/entitlements`).set(system()).expect(200)).body.data.items[0];
    const periods = createEntitlementPeriodService(api.db);
    expect(await periods.periodEnd(entitlement.id)).toBe(value.periodEnd);
    await periods.announceReset(entitlement.id, new Date(value.periodEnd));
    await periods.announceReset(entitlement.id, new Date(value.periodEnd));
    const resets = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'entitlement.reset' }).whereRaw("payload->'data'->>'entitlementId' = ?", [entitlement.id]);
    expect(resets.map((row) => row.payload.data)).toEqual([expect.objectContaining({ periodStart: value.periodEnd, periodEnd: new Date(Date.parse(value.periodEnd) + DAY_MS).toISOString() })]);
    expect(await periods.periodEnd(entitlement.id)).toBe(new Date(Date.parse(value.periodEnd) + DAY_MS).toISOString());
  });
  it('a yearly period counts its usage from its first day, before the grant that serves it took effect', async () => {
    const who = await customerWithEntity('yearly');
    const anchor = new Date(Date.now() - 200 * DAY_MS).toISOString();
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 500, usagePeriod: 'year', anchor }).expect(201);
    await api.http().post(`/customers/${who.customerId}/entitlements/api/grants`).set(system()).send({ amount: 800, effectiveAt: new Date(Date.now() - 100 * DAY_MS).toISOString() }).expect(201);
    await call(who.entityId, 700, new Date(Date.now() - 150 * DAY_MS).toISOString());
    await call(who.entityId, 100);
    expect(await valueOf(who.customerId, 'api')).toMatchObject({ usage: '800', balance: '500', overage: '0', hasAccess: true });
    const listed = (await api.http().get(`/customers/${who.customerId}/entitlements`).set(system()).expect(200)).body.data.items[0];
    expect(listed).toMatchObject(await valueOf(who.customerId, 'api'));
  });
});

describe('a monthly entitlement in a zone far from UTC', () => {
  it('counts the first local day of a 31-day period when checked at its last instant, as the list does', async () => {
    const far = await createTenant(api, 'entitlements-far-zone');
    const farAdmin = () => bearer(far.adminToken);
    const farSystem = () => bearer(far.systemToken);
    await api.http().put('/organisation/settings').set(farAdmin()).send({ timezone: 'Pacific/Kiritimati' }).expect(200);
    const farMeter = (await api.http().post('/meters').set(farAdmin()).send({ name: 'calls', metric: 'calls', aggregation: 'sum' }).expect(201)).body.data.id;
    await api.http().post('/features').set(farAdmin()).send({ key: 'api', name: 'API calls', meterId: farMeter }).expect(201);
    // Another organisation's meter is not found from here, as any id outside the caller's organisation.
    const foreignMeter = await api.http().post('/features').set(admin()).send({ key: `foreign-${far.organisationId}`, name: 'Foreign', meterId: farMeter });
    expect({ status: foreignMeter.status, message: foreignMeter.body.message }).toEqual({ status: 404, message: 'Meter not found' });
    const customer = (await api.http().post('/customers').set(farSystem()).send({ name: 'far', currency: 'EUR' }).expect(201)).body.data.id;
    const entity = (await api.http().post('/entities').set(farSystem()).send({ type: 'customer', name: 'far', customerId: customer }).expect(201)).body.data.id;
    // January in Kiritimati (UTC+14): from 2025-12-31T10:00Z to 2026-01-31T10:00Z.
    const events = [
      { at: '2025-12-31T09:30:00Z', value: 100 }, // 23:30 on 31 December there: the period before
      { at: '2025-12-31T10:30:00Z', value: 7 }, // 00:30 on 1 January there, 30 UTC days before the check
      { at: '2026-01-31T09:00:00Z', value: 5 }, // 23:00 on 31 January there
    ];
    const res = await api.http().post('/events/batch').set(farSystem())
      .send({ events: events.map((event) => ({ CustomerEntityId: entity, metric: 'calls', value: event.value, timestamp: event.at })) })
      .expect(200);
    expect(res.body.data.summary).toMatchObject({ success: 3, failed: 0 });
    await api.http().post(`/customers/${customer}/entitlements`).set(farSystem()).send({ featureKey: 'api', type: 'metered', limit: 1000, usagePeriod: 'month', anchor: '2026-01-01T00:00:00+14:00' }).expect(201);

    const service = createEntitlementService(api.db);
    const lastInstant = new Date('2026-01-31T09:59:59.999Z');
    const checked = await service.value(far.organisationId, customer, 'api', lastInstant);
    expect(checked).toMatchObject({ usage: '12', balance: '988', periodStart: '2025-12-31T10:00:00.000Z', periodEnd: '2026-01-31T10:00:00.000Z' });
    const listed = await service.list(far.organisationId, customer, { page: 1, limit: 10 }, lastInstant);
    expect(listed.items[0]).toMatchObject({ usage: '12', balance: '988' });
  });
});

describe('the check as a prepared statement', () => {
  it('names its statement unless the deployment turned prepared statements off, and answers the same either way', async () => {
    const who = await customerWithEntity('prepared');
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 1000, usagePeriod: 'month' }).expect(201);
    await call(who.entityId, 3);
    const answers = [];
    for (const preparedStatements of [true, false]) {
      const db = createDb(api.config.DATABASE_URL!, 2, undefined, { preparedStatements });
      const names: unknown[] = [];
      db.on('query', (query: { options?: { name?: string } }) => names.push(query.options?.name));
      try {
        answers.push(await createEntitlementService(db).value(tenant.organisationId, who.customerId, 'api'));
        // Within a transaction too: it runs on the handle's client.
        await db.transaction(async (trx) => answers.push(await createEntitlementService(trx).value(tenant.organisationId, who.customerId, 'api')));
      } finally {
        await db.destroy();
      }
      expect(names.filter((name) => name !== undefined)).toEqual(preparedStatements ? ['entitlement-check', 'entitlement-check'] : []);
    }
    expect(answers.map((answer) => answer.usage)).toEqual(['3', '3', '3', '3']);
  });
});

describe('boolean and static entitlements, and the rules around them', () => {
  it('answers access for a boolean one and the configuration for a static one, and lists every value', async () => {
    const who = await customerWithEntity('plain');
    await api.http().post('/features').set(admin()).send({ key: 'sso', name: 'Single sign-on' }).expect(201);
    await api.http().post('/features').set(admin()).send({ key: 'seats', name: 'Seats' }).expect(201);
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'sso', type: 'boolean' }).expect(201);
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'seats', type: 'static', config: { seats: 25 } }).expect(201);
    expect(await valueOf(who.customerId, 'sso')).toMatchObject({ hasAccess: true, type: 'boolean', usage: null, balance: null });
    expect(await valueOf(who.customerId, 'seats')).toMatchObject({ hasAccess: true, type: 'static', config: { seats: 25 } });
    const list = await api.http().get(`/customers/${who.customerId}/entitlements?limit=1`).set(system()).expect(200);
    expect(list.body.data).toMatchObject({ total: 2, page: 1, limit: 1, items: [expect.objectContaining({ featureKey: 'seats' })] });

    const again = await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'sso', type: 'boolean' });
    expect(again.status).toBe(409);
    const grant = await api.http().post(`/customers/${who.customerId}/entitlements/sso/grants`).set(system()).send({ amount: 5 });
    expect(grant.status).toBe(409);
    const badMetered = await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered' });
    expect(badMetered.status).toBe(400);
    // What a feature counts is fixed once an entitlement gives it.
    const features = await api.http().get('/features?search=sso').set(system()).expect(200);
    const sso = features.body.data.items[0];
    expect((await api.http().put(`/features/${sso.id}`).set(admin()).send({ meterId })).status).toBe(409);
    expect((await api.http().delete(`/features/${sso.id}`).set(admin())).status).toBe(409);
    await api.http().delete(`/customers/${who.customerId}/entitlements/sso`).set(system()).expect(200);
    expect((await api.http().get(`/customers/${who.customerId}/entitlements/sso/value`).set(system())).status).toBe(404);
  });

  it('when the same entitlement is created by several requests at once, then one is 201 and the others 409, and the customer has one', async () => {
    const who = await customerWithEntity('racing');
    for (const [featureKey, body] of [['sso', { type: 'boolean' }], ['api', { type: 'metered', limit: 10, usagePeriod: 'month' }]] as const) {
      const answers = await Promise.all(Array.from({ length: 4 }, () => api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey, ...body })));
      expect(answers.map((res) => res.status).sort()).toEqual([201, 409, 409, 409]);
      for (const res of answers.filter((answer) => answer.status === 409)) expect(res.body.errors[0].message).toContain('already has an entitlement');
    }
    const list = await api.http().get(`/customers/${who.customerId}/entitlements`).set(system()).expect(200);
    expect(list.body.data.items.map((item: { featureKey: string }) => item.featureKey).sort()).toEqual(['api', 'sso']);
  });

  it("when a feature's meter came to take the max of its events, then a metered entitlement to it is refused by the feature it names", async () => {
    const who = await customerWithEntity('max');
    const tag = randomUUID().slice(0, 8);
    const meter = (await api.http().post('/meters').set(admin()).send({ name: `peak ${tag}`, metric: `peak_${tag}`, aggregation: 'sum' }).expect(201)).body.data.id as string;
    await api.http().post('/features').set(admin()).send({ key: `peak_${tag}`, name: 'Peak', meterId: meter }).expect(201);
    await api.http().put(`/meters/${meter}`).set(admin()).send({ aggregation: 'max' }).expect(200);
    const res = await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: `peak_${tag}`, type: 'metered', limit: 10, usagePeriod: 'day' });
    expect([res.status, res.body.errors]).toEqual([400, [{ code: 1001, path: 'body.featureKey', message: expect.stringContaining('a metered feature counts a meter that sums or counts') }]]);
  });

  it("answers 404 for another organisation's customer", async () => {
    const who = await customerWithEntity('private');
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'api', type: 'metered', limit: 10, usagePeriod: 'month' }).expect(201);
    const foreign = bearer(other.systemToken);
    expect((await api.http().get(`/customers/${who.customerId}/entitlements/api/value`).set(foreign)).status).toBe(404);
    expect((await api.http().get(`/customers/${who.customerId}/entitlements`).set(foreign)).status).toBe(404);
    expect((await api.http().post(`/customers/${who.customerId}/entitlements`).set(foreign).send({ featureKey: 'api', type: 'boolean' })).status).toBe(404);

    // A deleted customer's entitlements answer as the customer does: not found.
    expect((await api.http().get(`/customers/${who.customerId}/entitlements/nothing/value`).set(system())).body.message).toBe('Entitlement not found');
    await api.http().delete(`/customers/${who.customerId}`).set(admin()).expect(200);
    const gone = await api.http().get(`/customers/${who.customerId}/entitlements/api/value`).set(system());
    expect({ status: gone.status, message: gone.body.message }).toEqual({ status: 404, message: 'Customer not found' });
  });

  it('a feature narrowed by a filter counts only the events that meet it', async () => {
    const who = await customerWithEntity('narrow');
    await api.http().post('/features').set(admin()).send({ key: 'gpu', name: 'GPU calls', meterId, filters: [{ key: 'hardware', operator: 'in', values: ['gpu'] }] }).expect(201);
    await call(who.entityId, 30, undefined, { hardware: 'gpu' });
    await call(who.entityId, 20, undefined, { hardware: 'cpu' });
    // Created after the usage: the counter is filled from the events already stored.
    await api.http().post(`/customers/${who.customerId}/entitlements`).set(system()).send({ featureKey: 'gpu', type: 'metered', limit: 100, usagePeriod: 'week' }).expect(201);
    await call(who.entityId, 5, undefined, { hardware: 'gpu' });
    expect(await valueOf(who.customerId, 'gpu')).toMatchObject({ usage: '35', balance: '65' });
    // An event deleted leaves the count.
    const stored = await api.http().get(`/usage?customerEntityId=${who.entityId}&limit=100`).set(system()).expect(200);
    const gpuEvent = stored.body.data.items.find((event: { metadata: Record<string, string> }) => event.metadata.hardware === 'gpu');
    expect(gpuEvent).toBeDefined();
    await api.http().delete(`/usage/${gpuEvent.id}`).set(admin()).expect(200);
    expect(await valueOf(who.customerId, 'gpu')).toMatchObject({ usage: '34', balance: '66' });
  });
});
