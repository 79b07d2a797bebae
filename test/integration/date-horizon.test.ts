import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { utcDaysFromToday } from '../support/calendar';

/**
 * Dates that drive work are bounded (docs/security.md, "Limits and budgets"): a billing date or a preview
 * date lies at most 366 days ahead of today in the organisation's time zone, and a preview reads each meter
 * once for all its windows, however many periods a contract has.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'date-horizon');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

async function meteredContract(startDate: string): Promise<{ contractId: string; metric: string; entityId: string }> {
  const tag = randomUUID().slice(0, 8);
  const customer = await api.http().post('/customers').set(system()).send({ name: `Horizon ${tag}`, currency: 'USD' }).expect(201);
  const entity = await api.http().post('/entities').set(system()).send({ type: 'customer', name: 'Entity', customerId: customer.body.data.id }).expect(201);
  const metric = `horizon_${tag}`;
  const meter = await api.http().post('/meters').set(admin()).send({ name: metric, metric, aggregation: 'sum' }).expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin())
    .send({
      name: metric,
      currency: 'USD',
      billingPeriod: 'monthly',
      items: [
        { name: 'Fee', pricingModel: 'flat', unitPrice: '10' },
        { name: 'Calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter.body.data.id },
      ],
    })
    .expect(201);
  const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate, plans: [{ planId: plan.body.data.id }] }).expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
  return { contractId: contract.body.data.id, metric, entityId: entity.body.data.id };
}

it('when a run is asked for a billing date more than 366 days ahead, then 400 names body.billingDate and no run is recorded', async () => {
  const before = await api.db('invoice_runs').where({ organisation_id: tenant.organisationId }).count({ n: '*' });
  const res = await api.http().post('/invoice-runs').set(system()).send({ billingDate: '9999-12-31' });
  expect(res.status).toBe(400);
  expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.billingDate', message: `must be at most 366 days ahead of today in the organisation's time zone: ${utcDaysFromToday(366)} or earlier` });
  expect(await api.db('invoice_runs').where({ organisation_id: tenant.organisationId }).count({ n: '*' })).toEqual(before);
});

it('when the upcoming invoice is asked for a date past the horizon, then 400 names query.date; at the horizon it answers', async () => {
  const { contractId } = await meteredContract(utcDaysFromToday(-40));
  const far = await api.http().get(`/contracts/${contractId}/upcoming-invoice`).query({ date: '9999-12-31' }).set(system());
  expect(far.status).toBe(400);
  expect(far.body.errors[0]).toMatchObject({ path: 'query.date' });
  const last = await api.http().get(`/contracts/${contractId}/upcoming-invoice`).query({ date: utcDaysFromToday(366) }).set(system()).expect(200);
  expect(last.body.data.billingDate).toBe(utcDaysFromToday(366));
});

it('when a contract has years of usage windows, then its preview reads the meter once for all of them, and bills every one', async () => {
  const { contractId, metric, entityId } = await meteredContract('2024-01-01');
  const events = ['2024-01-15', '2025-06-15', '2026-10-15'].map((day) => ({ CustomerEntityId: entityId, metric, value: 2, timestamp: `${day}T12:00:00Z` }));
  await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  const reads: string[] = [];
  const count = (query: { sql: string }) => {
    // Usage is read from the meter's rollups (or from raw events while they fill): either counts as a read.
    if (/\b(usage_events|meter_rollups)\b/.test(query.sql)) reads.push(query.sql);
  };
  api.db.on('query', count);
  try {
    const preview = await api.http().get(`/contracts/${contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(system()).expect(200);
    const lines = preview.body.data.invoices[0].items as Array<{ title: string; quantity: string }>;
    const calls = lines.filter((line) => line.title === 'Calls');
    // January 2024 to October 2026: 34 monthly windows, three of them with 2 calls.
    expect(calls).toHaveLength(34);
    expect(calls.filter((line) => line.quantity === '2')).toHaveLength(3);
  } finally {
    api.db.off('query', count);
  }
  expect(reads).toHaveLength(1);
});
