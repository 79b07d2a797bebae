import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { createCustomerEntity, usageEvent } from './support/fixtures';

// What a hostile or careless client sends: each is answered at once, with its reason, and stores nothing.
let api: TestApi;
let tenant: Tenant;
let other: Tenant;
let fixture: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'hostile');
  other = await createTenant(api, 'hostile-other');
  fixture = await createBillingFixture(api, tenant);
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

/** The answer, checked to come within 5 s. */
async function quickly<T>(request: PromiseLike<T>): Promise<T> {
  const started = Date.now();
  const res = await request;
  expect(Date.now() - started).toBeLessThan(5_000);
  return res;
}

const count = async (table: string, where: Record<string, unknown>) => Number((await api.db(table).where(where).count({ n: '*' }))[0]!.n);

describe('numbers and dates the columns cannot hold', () => {
  it('when an invoice line has quantity and price 1e17, then 400 naming both, and no invoice is created', async () => {
    const before = await count('invoices', { organisation_id: tenant.organisationId });
    const res = await quickly(api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Huge', quantity: 1e17, price: 1e17 }])));
    expect(res.status).toBe(400);
    expect(res.body.errors.map((item: { path: string }) => item.path)).toEqual(expect.arrayContaining(['body.invoiceItems.0.quantity', 'body.invoiceItems.0.price']));
    expect(await count('invoices', { organisation_id: tenant.organisationId })).toBe(before);
  });

  it('when a quantity has 30 decimals, then 400 rather than a rounded value', async () => {
    const res = await quickly(api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Fine', quantity: '1.' + '1'.repeat(30), price: 1 } as never])));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.invoiceItems.0.quantity' });
  });

  it('when usage values overflow NUMERIC(30,10) or need rounding, then those events fail alone with "27"', async () => {
    const { entityId } = await createCustomerEntity(api, tenant);
    const prefix = randomUUID();
    const values: unknown[] = [1e25, '123456789012345678901', 1e-11, 5];
    const events = values.map((value, i) => usageEvent(entityId, { eventId: `${prefix}-${i}`, value: value as number }));
    const res = await quickly(api.http().post('/events/batch').set(system()).send({ events }));
    expect(res.status).toBe(200);
    expect(res.body.data.summary).toEqual({ success: 1, failed: 3, total: 4, duplicates: 0 });
    expect(res.body.data.failedRecords.map((record: { index: number; code: string }) => [record.index, record.code])).toEqual([
      [0, '27'],
      [1, '27'],
      [2, '27'],
    ]);
    expect(await count('usage_events', { organisation_id: tenant.organisationId, event_id: `${prefix}-3` })).toBe(1);
  });

  it('when a date does not exist or dates are out of order, then 400 with the field', async () => {
    const contract = { customerId: fixture.customerId, currency: 'USD', plans: [{ planId: (await api.db('billing_plans').where({ organisation_id: tenant.organisationId }).first('id')).id }] };
    expect((await quickly(api.http().post('/contracts').set(system()).send({ ...contract, startDate: '0000-01-01' }))).status).toBe(400);
    const backwards = await quickly(api.http().post('/contracts').set(system()).send({ ...contract, startDate: '2026-03-01', endDate: '2026-02-01' }));
    expect(backwards.status).toBe(400);
    expect(backwards.body.errors[0]).toMatchObject({ path: 'body.endDate' });
    const reversed = invoiceBody(fixture.contractPlanId);
    reversed.invoiceData = { date: '2026-11-01', fromDate: '2026-11-30', toDate: '2026-11-01' };
    expect((await quickly(api.http().post('/invoices').set(system()).send(reversed))).status).toBe(400);
    const query = await quickly(api.http().post('/objects/query').set(system()).send({ object: 'invoices', filter: [{ field: 'date', op: 'gte', value: '2026-02-30' }] }));
    expect(query.status).toBe(400);
    expect(query.body.errors[0]).toMatchObject({ code: 1001, path: 'body.filter.0.value' });
  });

  it("when a contract's end date is moved before its start, then 400 and the contract keeps its end date", async () => {
    const res = await quickly(api.http().put(`/contracts/${fixture.contractId}`).set(system()).send({ endDate: '2025-12-31' }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.endDate' });
    const contract = await api.http().get(`/contracts/${fixture.contractId}`).set(system());
    expect(contract.body.data.endDate).toBeNull();
  });
});

describe('currencies', () => {
  it('when a currency is not ISO 4217, then 400 and nothing is stored', async () => {
    const res = await quickly(api.http().post('/customers').set(system()).send({ name: 'Unknown money', currency: 'ABC' }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.currency' });
    expect(await count('customers', { organisation_id: tenant.organisationId, name: 'Unknown money' })).toBe(0);
  });

  it('when a EUR contract names a USD plan, then 400 naming the plan, and no contract is created', async () => {
    const usdPlan = await api.db('billing_plans').where({ organisation_id: tenant.organisationId, currency: 'USD' }).first('id');
    const before = await count('contracts', { organisation_id: tenant.organisationId });
    const res = await quickly(api.http().post('/contracts').set(system()).send({ customerId: fixture.customerId, currency: 'EUR', startDate: '2026-01-01', plans: [{ planId: usdPlan.id }] }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.plans.0.planId', message: 'the plan is priced in USD, the contract in EUR' });
    expect(await count('contracts', { organisation_id: tenant.organisationId })).toBe(before);
  });
});

describe("references into another organisation answer like a missing id", () => {
  const notFoundBody = (res: { body: { status: string; errors: Array<{ code: number }> } }) => ({ status: res.body.status, code: res.body.errors[0]?.code });

  it("when a plan item names another organisation's meter or SKU, then 404 as for an unknown id", async () => {
    const meter = await api.http().post('/meters').set(bearer(other.adminToken)).send({ name: 'Other meter', metric: 'other_calls', aggregation: 'sum' });
    expect(meter.status).toBe(201);
    const item = (extra: object) => ({ name: `Plan ${randomUUID().slice(0, 6)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Calls', pricingModel: 'per_unit', unitPrice: '1', ...extra }] });
    const foreign = await quickly(api.http().post('/billing/plans').set(admin()).send(item({ meterId: meter.body.data.id })));
    const missing = await quickly(api.http().post('/billing/plans').set(admin()).send(item({ meterId: 'mtr_does_not_exist' })));
    expect(foreign.status).toBe(404);
    expect(notFoundBody(foreign)).toEqual(notFoundBody(missing));

    const group = await api.http().post('/catalog/sku-groups').set(bearer(other.adminToken)).send({ name: `G ${randomUUID().slice(0, 6)}` });
    const sku = await api.http().post('/catalog/skus').set(bearer(other.systemToken)).send({ code: `SKU-${randomUUID().slice(0, 6)}`, name: 'Other SKU', skuGroupId: group.body.data.id });
    expect(sku.status).toBe(201);
    const foreignSku = await quickly(api.http().post('/billing/plans').set(admin()).send(item({ skuId: sku.body.data.id })));
    expect(foreignSku.status).toBe(404);
    expect(await count('billing_plans', { organisation_id: tenant.organisationId, name: 'Calls' })).toBe(0);
  });

  it("when an invoice line or a tax names another organisation's plan item, then 404, never a constraint error", async () => {
    const otherFixture = await createBillingFixture(api, other);
    const line = invoiceBody(fixture.contractPlanId).invoiceItems.map((i) => ({ ...i, planItemId: otherFixture.planItemId }));
    const invoice = await quickly(api.http().post('/invoices').set(system()).send({ ...invoiceBody(fixture.contractPlanId), invoiceItems: line }));
    expect(invoice.status).toBe(404);
    expect(invoice.body.errors[0]).toMatchObject({ code: 1002 });

    const tax = await quickly(api.http().post(`/contracts/${fixture.contractId}/taxes`).set(admin()).send({ name: 'VAT', rate: '20', appliesTo: [otherFixture.planItemId] }));
    expect(tax.status).toBe(404);
    const own = await quickly(api.http().post(`/contracts/${fixture.contractId}/taxes`).set(admin()).send({ name: 'VAT', rate: '20', appliesTo: [fixture.planItemId] }));
    expect(own.status).toBe(201);
  });
});

describe('uploaded files', () => {
  it('when an HTML file is uploaded and downloaded, then it comes back as an attachment with nosniff, never rendered inline', async () => {
    const invoice = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId)).expect(201);
    const html = Buffer.from('<html><script>alert(document.cookie)</script></html>');
    const uploaded = await api.http().post(`/invoices/${invoice.body.data.id}/files`).set(system()).attach('file', html, { filename: 'page.html', contentType: 'text/html' });
    expect(uploaded.status).toBe(201);
    const res = await api.http().get(`/invoices/${invoice.body.data.id}/files/${uploaded.body.data.id}`).set(system());
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="page.html"; filename\*=UTF-8''page\.html$/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toBeDefined();
  });
});
