import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, createMeteredContract, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { createCustomerEntity, usageEvent } from './support/fixtures';

let api: TestApi;
let tenant: Tenant;
let usd: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'naming-decimals');
  usd = await createBillingFixture(api, tenant);
  // Raising converts the total to the base currency (USD).
  for (const fromCurrency of ['JPY', 'KWD']) {
    await api.http().post('/fx-rates').set(system()).send({ fromCurrency, toCurrency: 'USD', rate: fromCurrency === 'JPY' ? '0.0067' : '3.25', effectiveDate: '2026-01-01' }).expect(201);
  }
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

/** A draft invoice of the fixture's contract plan dated `date`, of one line. */
async function draft(fixture: BillingFixture, date: string, line: { title: string; quantity: number | string; price: number | string }) {
  const body = { ...invoiceBody(fixture.contractPlanId, [line as { title: string; quantity: number; price: number }]), invoiceData: { date } };
  const res = await api.http().post('/invoices').set(system()).send(body).expect(201);
  return res.body.data as { id: string };
}

type OpenApi = { paths: Record<string, Record<string, { parameters?: Array<{ name: string; deprecated?: boolean; schema: { deprecated?: boolean } }>; responses: Record<string, unknown> }>> };

describe('names', () => {
  it('when invoices are filtered by from and to, then the former dateFrom and dateTo give the same page, both names agreeing pass, and disagreeing ones answer 400 at the former name', async () => {
    const inside = await draft(usd, '2026-10-15', { title: 'Inside', quantity: 1, price: 10 });
    const outside = await draft(usd, '2026-09-15', { title: 'Outside', quantity: 1, price: 10 });
    const ids = (res: { body: { data: { items: Array<{ id: string }> } } }) => res.body.data.items.map((invoice) => invoice.id);

    const current = await api.http().get('/invoices').set(system()).query({ from: '2026-10-01', to: '2026-10-31' }).expect(200);
    expect(ids(current)).toContain(inside.id);
    expect(ids(current)).not.toContain(outside.id);
    const former = await api.http().get('/invoices').set(system()).query({ dateFrom: '2026-10-01', dateTo: '2026-10-31' }).expect(200);
    expect(ids(former)).toEqual(ids(current));
    const both = await api.http().get('/invoices').set(system()).query({ from: '2026-10-01', dateFrom: '2026-10-01', to: '2026-10-31' }).expect(200);
    expect(ids(both)).toEqual(ids(current));

    const conflict = await api.http().get('/invoices').set(system()).query({ from: '2026-10-01', dateFrom: '2026-09-01' });
    expect(conflict.status).toBe(400);
    expect(conflict.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'query.dateFrom' })]);
    // The order of a span holds whichever name carries its ends.
    const backwards = await api.http().get('/invoices').set(system()).query({ dateFrom: '2026-10-31', to: '2026-10-01' });
    expect(backwards.status).toBe(400);
    expect(backwards.body.errors).toEqual([expect.objectContaining({ path: 'query.to' })]);
  });

  it('when collections and webhook endpoints answer, then the new names carry the values and the former names carry the same ones', async () => {
    const collections = await api.http().get('/collections').set(system()).expect(200);
    expect(collections.body.data.asOfDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(collections.body.data.asOf).toBe(collections.body.data.asOfDate);
    const contract = await createMeteredContract(api, tenant, { label: 'Names', startDate: '2026-01-01', items: (meterId) => [{ name: 'Calls', pricingModel: 'per_unit', unitPrice: '1', meterId }] });
    const usage = (await api.http().get(`/contracts/${contract.contractId}/current-usage`).set(system()).expect(200)).body.data;
    expect(Date.parse(usage.calculatedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(usage.asOf).toBe(usage.calculatedAt);

    const created = await api.http().post('/webhooks/endpoints').set(admin()).send({ url: 'https://hooks.example.com/billing', eventTypes: ['invoice.raised'] }).expect(201);
    const rotated = await api.http().post(`/webhooks/endpoints/${created.body.data.id}/rotate-secret`).set(admin()).send({}).expect(200);
    expect(Date.parse(rotated.body.data.secretRotationEndsAt)).toBeGreaterThan(Date.now());
    expect(rotated.body.data.secretRotatedUntil).toBe(rotated.body.data.secretRotationEndsAt);
  });

  it('when the OpenAPI document is read, then every former name is declared and marked deprecated, and the new names are not', async () => {
    const document = (await api.http().get('/openapi.json').expect(200)).body as OpenApi;
    const parameters = document.paths['/invoices']!.get!.parameters!;
    const parameter = (name: string) => parameters.find((one) => one.name === name)!;
    for (const former of ['dateFrom', 'dateTo']) {
      expect(parameter(former).deprecated).toBe(true);
      expect(parameter(former).schema.deprecated).toBe(true);
    }
    for (const current of ['from', 'to']) expect(parameter(current).deprecated).toBeUndefined();

    const dataOf = (path: string, method: string, status: string) => {
      const response = document.paths[path]![method]!.responses[status] as { content: { 'application/json': { schema: { properties: { data: { properties: Record<string, { deprecated?: boolean }> } } } } } };
      return response.content['application/json'].schema.properties.data.properties;
    };
    const collections = dataOf('/collections', 'get', '200');
    expect(collections.asOf!.deprecated).toBe(true);
    expect(collections.asOfDate!.deprecated).toBeUndefined();
    const usage = dataOf('/contracts/{id}/current-usage', 'get', '200');
    expect(usage.asOf!.deprecated).toBe(true);
    expect(usage.calculatedAt!.deprecated).toBeUndefined();
    const endpoint = dataOf('/webhooks/endpoints/{id}', 'get', '200');
    expect(endpoint.secretRotatedUntil!.deprecated).toBe(true);
    expect(endpoint.secretRotationEndsAt!.deprecated).toBeUndefined();
  });
});

describe('decimals', () => {
  it('when the lines of a draft would add up to more than an invoice total can hold, then the draft or the line is refused at its path, and nothing is left that its raise would refuse', async () => {
    const huge = { title: 'Huge', quantity: '999999999999.999999', price: '99999999.999999' };
    const body = invoiceBody(usd.contractPlanId, [huge, huge] as unknown as Array<{ title: string; quantity: number; price: number }>);
    const refused = await api.http().post('/invoices').set(system()).send(body);
    expect([refused.status, refused.body.errors?.[0]?.path, refused.body.errors?.[0]?.message]).toEqual([400, 'body.invoiceItems', expect.stringContaining("the invoice's subtotal would be 199999999999997999800.00")]);
    const one = await draft(usd, '2026-11-01', huge);
    const more = await api.http().post(`/invoices/${one.id}/items`).set(system()).send(huge);
    expect([more.status, more.body.errors?.[0]?.path]).toEqual([400, 'body']);
    await api.http().post(`/invoices/${one.id}/raise`).set(system()).send({}).expect(200);
  });


  it('when usage values are stored with trailing zeros, then events and meter readings answer them exact and canonical', async () => {
    const metric = `calls_${randomUUID().slice(0, 8)}`;
    const { entityId } = await createCustomerEntity(api, tenant);
    await api.http().post('/events').set(system()).send(usageEvent(entityId, { metric, value: '105079.0000000000' })).expect(201);
    await api.http().post('/events').set(system()).send(usageEvent(entityId, { metric, value: '0.0000000010', timestamp: '2026-11-02T10:00:00Z' })).expect(201);
    const listed = await api.http().get('/usage').set(system()).query({ customerEntityId: entityId, metric }).expect(200);
    const values = (listed.body.data.items as Array<{ id: string; value: string }>).map((event) => event.value).sort();
    expect(values).toEqual(['0.000000001', '105079']);
    const big = (listed.body.data.items as Array<{ id: string; value: string }>).find((event) => event.value === '105079')!;
    const read = await api.http().get(`/events/${big.id}`).set(system()).expect(200);
    expect(read.body.data.value).toBe('105079');

    const meter = await api.http().post('/meters').set(admin()).send({ name: `sum-${metric}`, metric, aggregation: 'sum' }).expect(201);
    const usage = await api.http().get(`/meters/${meter.body.data.id}/usage`).set(system()).query({ customerEntityId: entityId, groupBy: 'day' }).expect(200);
    expect(usage.body.data.value).toBe('105079.000000001');
    expect(usage.body.data.groups).toEqual([
      { period: '2026-11-01', value: '105079' },
      { period: '2026-11-02', value: '0.000000001' },
    ]);
  });

  it('when prices and quantities carry trailing zeros, then plans and invoice lines answer them exact and canonical, never rounded', async () => {
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: `Plan ${randomUUID().slice(0, 8)}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Seat', pricingModel: 'per_unit', unitPrice: '1.50', quantity: '3.000' }] })
      .expect(201);
    expect(plan.body.data.items[0]).toMatchObject({ unitPrice: '1.5', quantity: '3' });
    const precise = await draft(usd, '2026-11-01', { title: 'Precise', quantity: '2.500000', price: '0.123456' });
    const read = await api.http().get(`/invoices/${precise.id}`).set(system()).expect(200);
    expect(read.body.data.items[0]).toMatchObject({ quantity: '2.5', price: '0.123456' });
  });

  it.each([
    ['JPY', 150, '150'],
    ['USD', 1.5, '1.50'],
    ['KWD', 1.5, '1.500'],
  ])('when a %s invoice is raised, then its line, totals and the webhook payload carry exactly the minor unit digits', async (currency, price, amount) => {
    const fixture = await createBillingFixture(api, tenant, currency);
    const invoice = await draft(fixture, '2026-11-01', { title: 'Fee', quantity: 1, price });
    const raised = await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200);
    expect(raised.body.data).toMatchObject({ currency, subtotal: amount, taxTotal: expect.any(String), total: amount });
    expect(raised.body.data.taxTotal).toMatch(currency === 'JPY' ? /^0$/ : new RegExp(`^0\\.${'0'.repeat(currency === 'KWD' ? 3 : 2)}$`));
    expect(raised.body.data.items[0]).toMatchObject({ quantity: '1', price: String(price), amount });

    // The message the webhooks send: the outbox's payload, as it is delivered.
    const event = await api
      .db('webhook_events')
      .where({ organisation_id: tenant.organisationId, type: 'invoice.raised' })
      .whereRaw("payload->'data'->>'id' = ?", [invoice.id])
      .first<{ payload: { data: { total: string; subtotal: string; items: Array<{ amount: string; price: string }> } } }>();
    expect(event!.payload.data).toMatchObject({ subtotal: amount, total: amount });
    expect(event!.payload.data.items[0]).toMatchObject({ amount, price: String(price) });
  });
});
