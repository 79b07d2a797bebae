import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;
const FORBIDDEN = { status: 'error', message: 'Forbidden', errors: [] };

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'catalog');
  other = await createTenant(api, 'catalog-other');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

describe('catalog', () => {
  it('when a SystemUser writes SKU groups, then 403; an Admin creates and deletes them, 409 while they hold SKUs', async () => {
    expect((await api.http().post('/catalog/sku-groups').set(system()).send({ name: 'Compute' })).body).toEqual(FORBIDDEN);
    const group = await api.http().post('/catalog/sku-groups').set(admin()).send({ name: 'Compute' });
    expect(group.status).toBe(201);
    const sku = await api.http().post('/catalog/skus').set(system()).send({ code: 'VM-S', name: 'Small VM', skuGroupId: group.body.data.id });
    expect(sku.status).toBe(201);
    expect((await api.http().delete(`/catalog/sku-groups/${group.body.data.id}`).set(system())).body).toEqual(FORBIDDEN);
    await api.http().delete(`/catalog/sku-groups/${group.body.data.id}`).set(admin()).expect(409);
    const listed = await api.http().get('/catalog/skus').query({ skuGroupId: group.body.data.id }).set(system());
    expect(listed.body.data.items.map((item: { code: string }) => item.code)).toEqual(['VM-S']);
    await api.http().post('/catalog/skus').set(system()).send({ code: 'VM-S', name: 'again' }).expect(409);
  });

  it('when SKU attributes are set, then they are checked against the sku attribute definitions', async () => {
    await api.http().post('/attributes').set(system()).send({ objectType: 'sku', key: 'tier', type: 'enum', required: true, allowedValues: ['basic', 'pro'] }).expect(201);
    await api.http().post('/attributes').set(system()).send({ objectType: 'sku', key: 'cores', type: 'number' }).expect(201);
    const missing = await api.http().post('/catalog/skus').set(system()).send({ code: 'VM-M', name: 'Medium VM', attributes: { cores: 4 } });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([expect.objectContaining({ code: 1001, path: 'body.attributes.tier' })]);
    const sku = await api.http().post('/catalog/skus').set(system()).send({ code: 'VM-M', name: 'Medium VM', attributes: { tier: 'pro', cores: 4 } });
    expect(sku.status).toBe(201);
    const wrong = await api.http().put(`/catalog/skus/${sku.body.data.id}`).set(system()).send({ attributes: { tier: 'gold', cores: 'four', colour: 'red' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors.map((error: { path: string }) => error.path).sort()).toEqual(['body.attributes.colour', 'body.attributes.cores', 'body.attributes.tier']);
    const updated = await api.http().put(`/catalog/skus/${sku.body.data.id}`).set(system()).send({ attributes: { tier: 'basic', cores: 2 } });
    expect(updated.body.data.attributes).toEqual({ tier: 'basic', cores: 2 });
    const check = await api.http().post('/attributes/validate').set(system()).send({ objectType: 'sku', attributes: { tier: 'x' } });
    expect(check.body.data).toEqual({ valid: false, errors: [{ path: 'attributes.tier', message: 'must be one of basic, pro' }] });
    await api.http().get(`/catalog/skus/${sku.body.data.id}`).set(bearer(other.systemToken)).expect(404);
    expect((await api.http().get('/catalog/skus').set(bearer(other.systemToken))).body.data.total).toBe(0);
  });

  it('when an attribute is defined twice for one object type, then 409; an enum without values, or with a value twice, 400', async () => {
    await api.http().post('/attributes').set(system()).send({ objectType: 'customer', key: 'segment', type: 'string' }).expect(201);
    await api.http().post('/attributes').set(system()).send({ objectType: 'customer', key: 'segment', type: 'string' }).expect(409);
    await api.http().post('/attributes').set(system()).send({ objectType: 'customer', key: 'size', type: 'enum' }).expect(400);
    const repeated = await api.http().post('/attributes').set(system()).send({ objectType: 'customer', key: 'size', type: 'enum', allowedValues: ['gold', 'silver', 'gold'] });
    expect([repeated.status, repeated.body.errors]).toEqual([400, [{ code: 1001, path: 'body.allowedValues', message: 'must not repeat a value' }]]);
  });
});

describe('organisation attributes', () => {
  it('when attributes are created, read, updated and deleted, then each step holds, and another organisation sees none', async () => {
    const created = await api.http().post('/organisation/attributes').set(system()).send({ key: 'erp.vendor', value: { name: 'SAP' } });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await api.http().post('/organisation/attributes').set(system()).send({ key: 'erp.vendor', value: 1 }).expect(409);
    const updated = await api.http().put(`/organisation/attributes/${id}`).set(system()).send({ value: 'Oracle' });
    expect(updated.body.data.value).toBe('Oracle');
    expect((await api.http().get('/organisation/attributes').set(bearer(other.systemToken))).body.data.total).toBe(0);
    await api.http().delete(`/organisation/attributes/${id}`).set(bearer(other.systemToken)).expect(404);
    await api.http().delete(`/organisation/attributes/${id}`).set(system()).expect(200);
  });
});

describe('organisation settings', () => {
  it('when settings are read the first time, then the defaults come back; a partial update changes only what it names', async () => {
    const defaults = await api.http().get('/organisation/settings').set(system());
    expect(defaults.body.data).toMatchObject({ baseCurrency: 'USD', timezone: 'UTC', invoiceNumberFormat: 'INV-{number:6}', paymentTermsDays: 30, autoRaiseGeneratedInvoices: false });
    const updated = await api.http().put('/organisation/settings').set(system()).send({ timezone: 'Europe/Berlin', paymentTermsDays: 14 });
    expect(updated.body.data).toMatchObject({ baseCurrency: 'USD', timezone: 'Europe/Berlin', paymentTermsDays: 14 });
  });

  it.each([
    [{ timezone: 'Mars/Olympus' }, 'body.timezone'],
    [{ baseCurrency: 'EURO' }, 'body.baseCurrency'],
    [{ invoiceNumberFormat: 'INV-{year}' }, 'body.invoiceNumberFormat'],
    [{ paymentTermsDays: 400 }, 'body.paymentTermsDays'],
  ])('when a setting is invalid (%j), then 400 naming it', async (body, path) => {
    const res = await api.http().put('/organisation/settings').set(system()).send(body);
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path });
  });

  it('when the number format and base currency change, then the next raised invoice follows them', async () => {
    const own = await createTenant(api, 'settings-numbering');
    await api.http().put('/organisation/settings').set(bearer(own.systemToken)).send({ invoiceNumberFormat: '{year}/{number:4}', baseCurrency: 'EUR' }).expect(200);
    await api.http().post('/fx-rates').set(bearer(own.systemToken)).send({ fromCurrency: 'USD', toCurrency: 'EUR', rate: '0.9', effectiveDate: '2026-10-01' }).expect(201);
    const fixture = await createBillingFixture(api, own);
    const invoice = await api.http().post('/invoices').set(bearer(own.systemToken)).send(invoiceBody(fixture.contractPlanId));
    const raised = await api.http().post(`/invoices/${invoice.body.data.id}/raise`).set(bearer(own.systemToken));
    expect(raised.body.data).toMatchObject({ number: '2026/0001', total: '100.00', baseCurrency: 'EUR', fxRate: '0.9', baseTotal: '90.00' });

    // An inverse rate has more decimals than an invoice keeps: its base total is its total times the rate it
    // shows, 12 decimals, on the draft and once raised alike.
    await api.http().post('/fx-rates').set(bearer(own.systemToken)).send({ fromCurrency: 'EUR', toCurrency: 'IDR', rate: '17500', effectiveDate: '2026-10-01' }).expect(201);
    const rupiah = await createBillingFixture(api, own, 'IDR');
    const large = await api.http().post('/invoices').set(bearer(own.systemToken)).send(invoiceBody(rupiah.contractPlanId, [{ title: 'Platform fee', quantity: 10_000, price: 99_999_999 }]));
    expect([large.status, large.body.errors]).toEqual([201, undefined]);
    const draft = await api.http().get(`/invoices/${large.body.data.id}`).set(bearer(own.systemToken)).expect(200);
    const inIdr = await api.http().post(`/invoices/${large.body.data.id}/raise`).set(bearer(own.systemToken)).expect(200);
    for (const shown of [draft.body.data, inIdr.body.data]) {
      expect(shown).toMatchObject({ total: '999999990000.00', fxRate: '0.000057142857', baseTotal: '57142856.43' });
    }
  });
});
