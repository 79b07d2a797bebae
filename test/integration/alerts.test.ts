import { randomUUID } from 'node:crypto';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity, usageEvent } from './support/fixtures';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';
import { eventually, startWebhookReceiver } from './support/webhook-receiver';
import { waitFor } from '../support/wait';
import { DAY_MS, earlierThisMonth, utcMonthOf } from '../support/calendar';
import { newId } from '../../src/db/ids';
import type { OutboxEvent } from '../../src/events/outbox';
import { createServices, serviceDepsFrom } from '../../src/services';

jest.setTimeout(300_000);

/**
 * Alerts on the real stack: ingestion on a worker of this file's own (which also relays the outbox, as the
 * suite's shared worker does), deliveries to a webhook receiver that counts what it is sent.
 */
let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

interface AlertEvent {
  webhookId: string;
  data: { alertId: string; threshold: string; value: string; periodStart: string };
}

/** The alert.triggered events the receiver got for an alert, one per webhook-id (a delivery may be retried). */
function triggeredFor(alertId: string): AlertEvent[] {
  const byId = new Map<string, AlertEvent>();
  for (const entry of receiver.received('/alerts')) {
    const body = JSON.parse(entry.body) as { type: string; data: AlertEvent['data'] };
    if (body.type === 'alert.triggered' && body.data.alertId === alertId) byId.set(entry.headers['webhook-id']!, { webhookId: entry.headers['webhook-id']!, data: body.data });
  }
  return [...byId.values()];
}

async function createMeter(metric: string): Promise<string> {
  const created = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: `Meter ${metric}`, metric, aggregation: 'sum' }).expect(201);
  return created.body.data.id as string;
}

async function createAlert(body: Record<string, unknown>): Promise<string> {
  const created = await api.http().post('/alerts').set(bearer(tenant.adminToken)).send(body);
  expect(created.status).toBe(201);
  return created.body.data.id as string;
}

async function ingest(events: Record<string, unknown>[]) {
  return api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events });
}

beforeAll(async () => {
  stack = await startBreakableStack('alerts', { WEBHOOK_RELAY: 'true' });
  api = stack.api;
  tenant = await createTenant(api, 'alerts');
  receiver = await startWebhookReceiver();
  await api.http().post('/webhooks/endpoints').set(bearer(tenant.adminToken)).send({ url: receiver.url('/alerts'), eventTypes: ['alert.triggered'] }).expect(201);
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

it('when 20 batches push usage across three thresholds at once and the worker is killed midway, then each threshold fires exactly once', async () => {
  const metric = `alert_calls_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const alertId = await createAlert({ name: 'Calls', scope: { customerId }, metric: 'usage', meterId, thresholds: [2500, 5000, 7500], recurring: 'period' });

  // 20 batches of 500 events of 1: 10,000 in November, past each threshold.
  const prefix = randomUUID();
  const batches = Array.from({ length: 20 }, (_, batch) =>
    Array.from({ length: 500 }, (_, i) => usageEvent(entityId, { metric, eventId: `${prefix}-${batch}-${i}`, value: 1, timestamp: new Date(Date.parse('2026-11-02T00:00:00Z') + (batch * 500 + i) * 60_000).toISOString() })),
  );
  const requests = batches.map((events) => ingest(events).then((res) => res));

  // The worker dies once the first threshold has fired, with batches still being ingested and evaluated.
  await waitFor(async () => ((await api.db('alert_triggers').where({ alert_id: alertId }).first()) ? true : undefined), 120_000, 20);
  await stack.killWorker();
  await stack.startWorker();

  const answers = await Promise.all(requests);
  for (const answer of answers) expect([200, 202]).toContain(answer.status);
  // A batch the kill held up answered 202 with its id, and completes once the new worker takes it on.
  for (const answer of answers.filter((candidate) => candidate.status === 202)) {
    await waitFor(async () => {
      const read = await api.http().get(`/events/batches/${answer.body.data.id}`).set(bearer(tenant.systemToken));
      if (read.status !== 200) throw new Error(`GET /events/batches/${answer.body.data.id} answered ${read.status}: ${JSON.stringify(read.body)}`);
      return read.body.data.status === 'completed' ? true : undefined;
    }, 180_000);
  }
  const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric }).count({ n: '*' });
  expect(Number(stored[0]!.n)).toBe(10_000);

  const events = await eventually(() => (triggeredFor(alertId).length >= 3 ? triggeredFor(alertId) : undefined), 60_000);
  // Anything late or repeated would show within a few relay rounds.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect(triggeredFor(alertId)).toHaveLength(3);
  expect(events.map((event) => event.data.threshold).sort()).toEqual(['2500', '5000', '7500']);
  for (const event of events) {
    expect(event.data.periodStart).toBe('2026-11-01T00:00:00.000Z');
    expect(Number(event.data.value)).toBeGreaterThanOrEqual(Number(event.data.threshold));
  }
  const triggers = await api.http().get(`/alerts/${alertId}/triggers`).set(bearer(tenant.systemToken)).expect(200);
  expect(triggers.body.data.total).toBe(3);
  expect(triggers.body.data.items.map((trigger: { threshold: string }) => trigger.threshold).sort()).toEqual(['2500', '5000', '7500']);
  // Nothing of a trigger is text to search: a search is refused, not ignored.
  const searched = await api.http().get(`/alerts/${alertId}/triggers`).query({ search: 'zzzz' }).set(bearer(tenant.systemToken));
  expect([searched.status, searched.body.errors?.[0]?.path]).toEqual([400, 'query.search']);
});

it('when a stored event is corrected past a threshold, then the alert fires as if the usage had arrived so', async () => {
  const metric = `alert_edit_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const alertId = await createAlert({ name: 'Edited', scope: { customerId }, metric: 'usage', meterId, thresholds: ['10'], recurring: 'period' });
  expect((await ingest([usageEvent(entityId, { metric, value: '4', timestamp: '2026-11-20T10:00:00Z' })])).status).toBe(200);
  const [stored] = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric }).pluck('id');
  // Below the threshold: nothing fires.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(triggeredFor(alertId)).toEqual([]);

  await api.http().put(`/usage/${stored}`).set(bearer(tenant.systemToken)).send({ value: '12' }).expect(200);
  const [event] = await eventually(() => (triggeredFor(alertId).length > 0 ? triggeredFor(alertId) : undefined), 10_000);
  expect(event!.data).toEqual({ alertId, threshold: '10', value: '12', periodStart: '2026-11-01T00:00:00.000Z' });
});

it('when usage crosses a threshold, then the webhook arrives within 5 s of the ingestion answer, and the trigger reads back', async () => {
  const metric = `alert_fast_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const alertId = await createAlert({ name: 'Fast', scope: { customerId }, metric: 'usage', meterId, thresholds: ['10.5'], recurring: 'period' });

  const answered = await ingest([usageEvent(entityId, { metric, value: '11', timestamp: '2026-11-20T10:00:00Z' })]);
  expect(answered.status).toBe(200);
  const at = Date.now();
  const [event] = await eventually(() => (triggeredFor(alertId).length > 0 ? triggeredFor(alertId) : undefined), 5_000);
  expect(Date.now() - at).toBeLessThan(5_000);
  expect(event!.data).toEqual({ alertId, threshold: '10.5', value: '11', periodStart: '2026-11-01T00:00:00.000Z' });
  const triggers = await api.http().get(`/alerts/${alertId}/triggers`).set(bearer(tenant.systemToken)).expect(200);
  expect(triggers.body.data.items).toEqual([expect.objectContaining({ alertId, threshold: '10.5', value: '11', periodStart: '2026-11-01T00:00:00.000Z' })]);
});

it('when a recurring alert crossed its threshold in one period, then usage of the next period fires it again; an alert that never recurs counts only usage from its creation', async () => {
  const metric = `alert_monthly_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const recurring = await createAlert({ name: 'Monthly', scope: { customerId }, metric: 'usage', meterId, thresholds: [100], recurring: 'period' });
  const once = await createAlert({ name: 'Once', scope: { customerId }, metric: 'usage', meterId, thresholds: [100], recurring: 'never' });

  // Periods are those of the events' timestamps: last month's usage fires last month's trigger.
  const thisMonth = utcMonthOf();
  const lastMonth = utcMonthOf(thisMonth.start.getTime() - 1);
  expect((await ingest([usageEvent(entityId, { metric, value: 150, timestamp: new Date(lastMonth.start.getTime() + 14 * DAY_MS).toISOString() })])).status).toBe(200);
  await eventually(() => (triggeredFor(recurring).length === 1 ? true : undefined), 15_000);
  // This month's usage, from before the alerts were made, fires this month's; a second push fires nothing more.
  const [early, later] = earlierThisMonth(2);
  expect((await ingest([usageEvent(entityId, { metric, value: 120, timestamp: early! })])).status).toBe(200);
  expect((await ingest([usageEvent(entityId, { metric, value: 500, timestamp: later! })])).status).toBe(200);
  await eventually(() => (triggeredFor(recurring).length === 2 ? true : undefined), 15_000);
  // Usage stamped now, after the alert's creation: the one that never recurs fires, once.
  const now = new Date();
  expect((await ingest([usageEvent(entityId, { metric, value: 101, timestamp: now.toISOString() })])).status).toBe(200);
  await eventually(() => (triggeredFor(once).length === 1 ? true : undefined), 15_000);
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  // Had the month turned since, the usage stamped now would have fired a third period: the test ran across midnight.
  expect(utcMonthOf(now).firstDay).toBe(thisMonth.firstDay);
  expect(triggeredFor(recurring).map((event) => event.data.periodStart).sort()).toEqual([lastMonth.start.toISOString(), thisMonth.start.toISOString()]);
  const [lifetime] = triggeredFor(once);
  expect(lifetime!.data.value).toBe('101');
  expect(triggeredFor(once)).toHaveLength(1);
});

it('when one batch holds usage of months far apart, then only the periods its events fall in are evaluated, not the months between', async () => {
  const metric = `alert_span_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const monthsAgo = (months: number) => {
    let month = utcMonthOf();
    for (let i = 0; i < months; i += 1) month = utcMonthOf(month.start.getTime() - 1);
    return month;
  };
  const midMonth = (months: number) => new Date(monthsAgo(months).start.getTime() + 14 * DAY_MS).toISOString();
  // Five months ago already holds 150 when the alert is made, and the relay has handed that usage on: the
  // alert's creation reads only the current period.
  const stored = await ingest([usageEvent(entityId, { metric, value: 150, timestamp: midMonth(5) })]);
  expect(stored.status).toBe(200);
  await waitFor(async () => {
    const pending = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'usage.ingested' }).whereRaw("payload->'data'->>'batchId' = ?", [stored.body.data.batchId]).whereNull('dispatched_at').first();
    return pending === undefined ? true : undefined;
  }, 15_000);
  const alertId = await createAlert({ name: 'Span', scope: { customerId }, metric: 'usage', meterId, thresholds: [100], recurring: 'period' });

  // One batch: forty months ago (300, past the threshold, further back than the periods a span is read
  // over), eight months ago (1), three months ago (200, past the threshold) and now (1).
  const batch = [
    usageEvent(entityId, { metric, value: 300, timestamp: midMonth(40) }),
    usageEvent(entityId, { metric, value: 1, timestamp: midMonth(8) }),
    usageEvent(entityId, { metric, value: 200, timestamp: midMonth(3) }),
    usageEvent(entityId, { metric, value: 1, timestamp: new Date().toISOString() }),
  ];
  expect((await ingest(batch)).status).toBe(200);
  await eventually(() => (triggeredFor(alertId).length >= 2 ? true : undefined), 15_000);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  // Forty and three months ago fire; five months ago, which the batch did not touch, does not.
  expect(triggeredFor(alertId).map((event) => event.data.periodStart).sort()).toEqual([monthsAgo(40).start.toISOString(), monthsAgo(3).start.toISOString()]);
});

it('when a credit-balance alert is created on a balance already at or below a threshold, then that threshold fires at once; a grant above the rest fires nothing', async () => {
  const { customerId } = await createCustomerEntity(api, tenant);
  await api.http().post(`/customers/${customerId}/credits`).set(bearer(tenant.systemToken)).send({ amount: '100', currency: 'USD', reason: 'welcome' }).expect(201);
  const alertId = await createAlert({ name: 'Low credit', scope: { customerId }, metric: 'credit_balance', currency: 'USD', thresholds: [50, 150], recurring: 'never' });

  const triggers = await api.http().get(`/alerts/${alertId}/triggers`).set(bearer(tenant.systemToken)).expect(200);
  expect(triggers.body.data.items).toEqual([expect.objectContaining({ threshold: '150', value: '100.00' })]);
  await api.http().post(`/customers/${customerId}/credits`).set(bearer(tenant.systemToken)).send({ amount: '10', currency: 'USD', reason: 'more' }).expect(201);
  await eventually(() => (triggeredFor(alertId).length === 1 ? true : undefined), 15_000);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(triggeredFor(alertId).map((event) => event.data.threshold)).toEqual(['150']);
});

it('when a credit note that put credit on the balance is voided, then the drop is watched: a credit-balance alert fires', async () => {
  const fixture = await createBillingFixture(api, tenant);
  const system = bearer(tenant.systemToken);
  const invoice = (await api.http().post('/invoices').set(system).send(invoiceBody(fixture.contractPlanId)).expect(201)).body.data.id as string;
  await api.http().post(`/invoices/${invoice}/raise`).set(system).send({}).expect(200);
  await api.http().post(`/invoices/${invoice}/mark-paid`).set(system).send({ paidDate: '2026-11-15' }).expect(200);
  const note = await api.http().post(`/invoices/${invoice}/credit-notes`).set(system).send({ reason: 'Goodwill', amount: '40', refund: false }).expect(201);
  expect(note.body.data.settlement).toBe('balance');
  const alertId = await createAlert({ name: 'Credit gone', scope: { customerId: fixture.customerId }, metric: 'credit_balance', currency: 'USD', thresholds: [10], recurring: 'never' });
  const triggers = async () => (await api.http().get(`/alerts/${alertId}/triggers`).set(system).expect(200)).body.data.items as Array<{ threshold: string; value: string }>;
  expect(await triggers()).toEqual([]);
  // The void takes the 40.00 back: no grant, no usage, no raise, and still the balance fell to 0.
  await api.http().post(`/credit-notes/${note.body.data.id}/void`).set(bearer(tenant.adminToken)).send({}).expect(200);
  await eventually(async () => ((await triggers()).length > 0 ? true : undefined), 15_000);
  expect(await triggers()).toEqual([expect.objectContaining({ threshold: '10', value: '0.00' })]);
});

it('refuses what an alert cannot watch: a usage alert without a meter, thresholds out of order, a meter or customer of another organisation', async () => {
  const other = await createTenant(api, 'alerts-other');
  const { customerId } = await createCustomerEntity(api, tenant);
  const { customerId: foreignCustomer } = await createCustomerEntity(api, other);
  const meterId = await createMeter(`alert_refused_${randomUUID().slice(0, 8)}`);
  const post = (body: Record<string, unknown>) => api.http().post('/alerts').set(bearer(tenant.adminToken)).send({ name: 'A', recurring: 'period', thresholds: [1], ...body });

  expect((await post({ scope: { customerId }, metric: 'usage' })).status).toBe(400);
  expect((await post({ scope: { customerId }, metric: 'usage', meterId, thresholds: [5, 5] })).status).toBe(400);
  expect((await post({ scope: { customerId }, metric: 'credit_balance' })).status).toBe(400);
  expect((await post({ scope: { customerId }, metric: 'credit_balance', currency: 'XYZ' })).status).toBe(400);
  expect((await post({ scope: { customerId: foreignCustomer }, metric: 'usage', meterId })).status).toBe(404);
  expect((await post({ scope: { customerId }, metric: 'usage', meterId: 'mtr_missing' })).status).toBe(404);
  // SystemUser reads alerts, and only Admin defines them.
  expect((await api.http().post('/alerts').set(bearer(tenant.systemToken)).send({ name: 'A', scope: { customerId }, metric: 'usage', meterId, thresholds: [1], recurring: 'period' })).status).toBe(403);
  const id = await createAlert({ name: 'Kept', scope: { customerId }, metric: 'usage', meterId, thresholds: [1], recurring: 'period' });
  expect((await api.http().get(`/alerts/${id}`).set(bearer(other.adminToken))).status).toBe(404);
  // Thresholds read back exactly, however many digits the column holds.
  const updated = await api.http().put(`/alerts/${id}`).set(bearer(tenant.adminToken)).send({ thresholds: [2, '99999999999999999999.9999'] }).expect(200);
  expect(updated.body.data.thresholds).toEqual(['2', '99999999999999999999.9999']);
  expect((await api.http().get('/alerts').set(bearer(tenant.systemToken)).query({ search: 'Kept' }).expect(200)).body.data.items[0].thresholds).toEqual(['2', '99999999999999999999.9999']);
  await api.http().delete(`/alerts/${id}`).set(bearer(tenant.adminToken)).expect(200);
  expect((await api.http().get(`/alerts/${id}`).set(bearer(tenant.systemToken))).status).toBe(404);
});

it('when the same batch of events is evaluated twice, and twice at once, then each threshold is recorded and announced once', async () => {
  const metric = `alert_repeat_${randomUUID().slice(0, 8)}`;
  const meterId = await createMeter(metric);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  expect((await ingest([usageEvent(entityId, { metric, value: 30, timestamp: '2026-11-05T10:00:00Z' })])).status).toBe(200);
  // An alert written as it is stored, without the evaluation its creation runs: only the calls below evaluate it.
  const alertId = newId('alr');
  await api.db('alerts').insert({ id: alertId, organisation_id: tenant.organisationId, name: 'Repeat', customer_id: customerId, metric: 'usage', meter_id: meterId, thresholds: ['10', '20', '40'], recurring: 'period' });

  const event: OutboxEvent = {
    id: newId('msg'),
    organisation_id: tenant.organisationId,
    type: 'usage.ingested',
    payload: { type: 'usage.ingested', timestamp: new Date().toISOString(), data: { batchId: 'b', chunkIndex: 0, events: 1, customerIds: [customerId], metrics: [metric], from: '2026-11-05T10:00:00Z', to: '2026-11-05T10:00:00Z' } },
    created_at: new Date(),
    dispatched_at: null,
    triggered_object_id: null,
  };
  const { alerts } = createServices(serviceDepsFrom(api.config, api.db));
  const evaluate = () => api.db.transaction((trx) => alerts.evaluateEvents(trx, [event]));
  await Promise.all([evaluate(), evaluate(), evaluate()]);
  await evaluate();

  const triggers = await api.db('alert_triggers').where({ alert_id: alertId }).orderBy('threshold');
  expect(triggers.map((row: { threshold: string; value: string }) => [Number(row.threshold), Number(row.value)])).toEqual([
    [10, 30],
    [20, 30],
  ]);
  const announced = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'alert.triggered' }).whereRaw("payload -> 'data' ->> 'alertId' = ?", [alertId]);
  expect(announced.map((row: { payload: { data: { threshold: string } } }) => row.payload.data.threshold).sort()).toEqual(['10', '20']);
});

it("when usage raises a contract's spend past a threshold, then spend alerts on the contract and on its customer fire with the rating engine's figure", async () => {
  const tag = randomUUID().slice(0, 8);
  const system = bearer(tenant.systemToken);
  const admin = bearer(tenant.adminToken);
  const customer = await api.http().post('/customers').set(system).send({ name: `Spend ${tag}`, currency: 'USD' }).expect(201);
  const customerId = customer.body.data.id as string;
  const entity = await api.http().post('/entities').set(system).send({ type: 'customer', name: `Entity ${tag}`, customerId }).expect(201);
  const metric = `spend_calls_${tag}`;
  const meterId = await createMeter(metric);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin)
    .send({ name: `Metered ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.37', meterId }] })
    .expect(201);
  const contract = await api.http().post('/contracts').set(system).send({ customerId, currency: 'USD', startDate: '2026-11-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
  const contractId = contract.body.data.id as string;
  await api.http().post(`/contracts/${contractId}/activate`).set(system).send({}).expect(200);

  // A spend alert on a contract counts in the contract's currency.
  expect((await api.http().post('/alerts').set(admin).send({ name: 'EUR', scope: { contractId }, metric: 'spend', currency: 'EUR', thresholds: [1], recurring: 'period' })).status).toBe(400);
  // Without a currency it takes the contract's; one on a customer needs it.
  const onContract = await createAlert({ name: 'Contract spend', scope: { contractId }, metric: 'spend', thresholds: [5, 10], recurring: 'period' });
  expect((await api.http().get(`/alerts/${onContract}`).set(admin).expect(200)).body.data.currency).toBe('USD');
  const bare = await api.http().post('/alerts').set(admin).send({ name: 'No currency', scope: { customerId }, metric: 'spend', thresholds: [7], recurring: 'period' });
  expect([bare.status, bare.body.errors]).toEqual([400, [{ code: 1001, path: 'body.currency', message: "is required with metric spend on a customer (one on a contract takes the contract's)" }]]);
  const onCustomer = await createAlert({ name: 'Customer spend', scope: { customerId }, metric: 'spend', currency: 'USD', thresholds: [7], recurring: 'period' });

  // 20 calls at 0.37: 7.40 so far this period.
  const usedAt = Math.max(Date.now() - 60_000, utcMonthOf().start.getTime());
  expect((await ingest([usageEvent(entity.body.data.id, { metric, value: 20, timestamp: new Date(usedAt).toISOString() })])).status).toBe(200);
  const [contractEvent] = await eventually(() => (triggeredFor(onContract).length > 0 ? triggeredFor(onContract) : undefined), 15_000);
  const [customerEvent] = await eventually(() => (triggeredFor(onCustomer).length > 0 ? triggeredFor(onCustomer) : undefined), 15_000);
  const current = (await api.http().get(`/contracts/${contractId}/current-usage`).set(system).expect(200)).body.data;
  expect(current.total).toBe('7.40');
  expect(contractEvent!.data).toMatchObject({ threshold: '5', value: '7.40', periodStart: utcMonthOf(usedAt).start.toISOString() });
  expect(customerEvent!.data).toMatchObject({ threshold: '7', value: '7.40' });
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(triggeredFor(onContract)).toHaveLength(1);
});
