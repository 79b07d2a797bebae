import { randomUUID } from 'node:crypto';
import { newId } from '../../src/db/ids';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  [tenant, other] = await Promise.all([createTenant(api, 'fx'), createTenant(api, 'fx-other')]);
});
afterAll(() => api.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function as(who: Tenant, headers: Record<string, string> = {}) {
  const auth = { ...bearer(who.systemToken), ...headers };
  return {
    get: (path: string, query: Record<string, string> = {}) => api.http().get(path).query(query).set(auth),
    post: (path: string, body: object) => api.http().post(path).set(auth).send(body),
    put: (path: string, body: object) => api.http().put(path).set(auth).send(body),
    delete: (path: string) => api.http().delete(path).set(auth),
  };
}

/** A fresh tenant per FX scenario, so that rates of one scenario never answer another's question. */
async function fxTenant(label: string): Promise<Tenant> {
  return createTenant(api, label);
}

async function createRate(who: Tenant, fromCurrency: string, toCurrency: string, rate: string | number, effectiveDate: string) {
  const res = await as(who).post('/fx-rates', { fromCurrency, toCurrency, rate, effectiveDate });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; rate: string; effectiveDate: string };
}

const ids = (res: { body: { data: { items: Array<{ id: string }> } } }) => res.body.data.items.map((item) => item.id);

describe('FX rates', () => {
  it('when a rate is created, then 201 with the rate as a plain decimal string and it reads back by id', async () => {
    const created = await as(tenant).post('/fx-rates', { fromCurrency: 'USD', toCurrency: 'EUR', rate: '0.9200', effectiveDate: '2026-11-01' });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^fx_/),
      fromCurrency: 'USD',
      toCurrency: 'EUR',
      rate: '0.92',
      effectiveDate: '2026-11-01',
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const read = await as(tenant).get(`/fx-rates/${created.body.data.id}`).expect(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it('when the rate is a JSON number with twelve decimals, then it is kept exactly', async () => {
    const created = await createRate(tenant, 'USD', 'CHF', 0.123456789012, '2026-11-01');
    expect(created.rate).toBe('0.123456789012');
    const row = await api.db('fx_rates').where({ id: created.id }).first();
    expect(row.rate).toBe('0.123456789012');
  });

  it('when the same pair and date is created twice, then 409; another organisation may create it', async () => {
    await createRate(tenant, 'GBP', 'USD', '1.27', '2026-10-01');
    const duplicate = await as(tenant).post('/fx-rates', { fromCurrency: 'GBP', toCurrency: 'USD', rate: '1.30', effectiveDate: '2026-10-01' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ status: 'error', errors: [{ code: 1003 }] });
    await createRate(other, 'GBP', 'USD', '1.30', '2026-10-01');
  });

  it.each([
    [{ fromCurrency: 'XYZ' }, 'body.fromCurrency'],
    [{ toCurrency: 'usd' }, 'body.toCurrency'],
    [{ rate: 0 }, 'body.rate'],
    [{ rate: '-1.5' }, 'body.rate'],
    [{ rate: 'abc' }, 'body.rate'],
    [{ rate: '0.1234567890123' }, 'body.rate'],
    [{ effectiveDate: '2026-02-30' }, 'body.effectiveDate'],
    [{ effectiveDate: '2026-11-01T00:00:00Z' }, 'body.effectiveDate'],
    [{ toCurrency: 'SEK' }, 'body.toCurrency'],
  ])('when the body has %j, then 400 on %s', async (override, path) => {
    const body = { fromCurrency: 'SEK', toCurrency: 'NOK', rate: '1.01', effectiveDate: '2026-11-01', ...override };
    const res = await as(tenant).post('/fx-rates', body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path })]);
  });

  it('when several rates exist for a pair, then the effective one is the latest on or before the date', async () => {
    const org = await fxTenant('fx-effective');
    const january = await createRate(org, 'USD', 'EUR', '0.90', '2026-01-01');
    const march = await createRate(org, 'USD', 'EUR', '0.95', '2026-03-01');
    const june = await createRate(org, 'USD', 'EUR', '0.93', '2026-06-15');
    const expected: Array<[string, { id: string; rate: string; effectiveDate: string }]> = [
      ['2026-01-01', january],
      ['2026-02-28', january],
      ['2026-03-01', march],
      ['2026-06-14', march],
      ['2026-06-15', june],
      ['2027-12-31', june],
    ];
    for (const [date, rate] of expected) {
      const res = await as(org).get('/fx-rates/effective', { from: 'USD', to: 'EUR', date });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        from: 'USD',
        to: 'EUR',
        date,
        rate: rate.rate,
        inverted: false,
        fxRateId: rate.id,
        effectiveDate: rate.effectiveDate,
      });
    }
    const before = await as(org).get('/fx-rates/effective', { from: 'USD', to: 'EUR', date: '2025-12-31' });
    expect(before.status).toBe(404);
    expect(before.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
  });

  it('when only the opposite pair has a rate, then its inverse answers with inverted: true; the pair as asked wins when it has one', async () => {
    const org = await fxTenant('fx-inverse');
    const eurGbp = await createRate(org, 'EUR', 'GBP', '0.8', '2026-01-01');
    const inverse = await as(org).get('/fx-rates/effective', { from: 'GBP', to: 'EUR', date: '2026-05-01' }).expect(200);
    expect(inverse.body.data).toMatchObject({ rate: '1.25', inverted: true, fxRateId: eurGbp.id, effectiveDate: '2026-01-01' });
    const direct = await as(org).get('/fx-rates/effective', { from: 'EUR', to: 'GBP', date: '2026-05-01' }).expect(200);
    expect(direct.body.data).toMatchObject({ rate: '0.8', inverted: false });

    // An older rate for the pair as asked still wins over a newer inverse.
    const gbpEur = await createRate(org, 'GBP', 'EUR', '1.2', '2025-06-01');
    const preferred = await as(org).get('/fx-rates/effective', { from: 'GBP', to: 'EUR', date: '2026-05-01' }).expect(200);
    expect(preferred.body.data).toMatchObject({ rate: '1.2', inverted: false, fxRateId: gbpEur.id });
  });

  it('when from and to are the same currency, then the rate is 1 without any stored rate', async () => {
    const res = await as(tenant).get('/fx-rates/effective', { from: 'JPY', to: 'JPY', date: '2026-11-01' }).expect(200);
    expect(res.body.data).toEqual({ from: 'JPY', to: 'JPY', date: '2026-11-01', rate: '1', inverted: false, fxRateId: null, effectiveDate: null });
  });

  it('when no date is given, then the rate effective today (UTC) answers', async () => {
    const res = await as(tenant).get('/fx-rates/effective', { from: 'EUR', to: 'EUR' }).expect(200);
    expect(res.body.data.date).toBe(new Date().toISOString().slice(0, 10));
  });

  it('when the effective rate is asked with an unknown currency or a bad date, then 400', async () => {
    const unknown = await as(tenant).get('/fx-rates/effective', { from: 'USD', to: 'ABC', date: '2026-11-01' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([expect.objectContaining({ path: 'query.to' })]);
    const badDate = await as(tenant).get('/fx-rates/effective', { from: 'USD', to: 'EUR', date: '2026-13-01' });
    expect(badDate.status).toBe(400);
    expect(badDate.body.errors).toEqual([expect.objectContaining({ path: 'query.date' })]);
  });

  it('when converting into a zero-decimal currency (JPY), then the result rounds half-up to whole yen', async () => {
    const org = await fxTenant('fx-jpy');
    await createRate(org, 'USD', 'JPY', '150.5', '2026-01-01');
    const half = await as(org).get('/fx-rates/convert', { amount: '1', from: 'USD', to: 'JPY', date: '2026-11-01' }).expect(200);
    // Half-even would give 150; half-up gives 151.
    expect(half.body.data).toMatchObject({ amount: '1', from: 'USD', to: 'JPY', rate: '150.5', converted: '151' });
    const below = await as(org).get('/fx-rates/convert', { amount: '10.01', from: 'USD', to: 'JPY', date: '2026-11-01' }).expect(200);
    expect(below.body.data.converted).toBe('1507'); // 1506.505 → 1507
    const inverse = await as(org).get('/fx-rates/convert', { amount: '301', from: 'JPY', to: 'USD', date: '2026-11-01' }).expect(200);
    expect(inverse.body.data).toMatchObject({ inverted: true, converted: '2.00' });
  });

  it('when converting into a three-decimal currency (KWD), then the result rounds half-up to the fils', async () => {
    const org = await fxTenant('fx-kwd');
    await createRate(org, 'USD', 'KWD', '0.3085', '2026-01-01');
    const res = await as(org).get('/fx-rates/convert', { amount: '1', from: 'USD', to: 'KWD', date: '2026-02-01' }).expect(200);
    // Half-even would give 0.308; half-up gives 0.309.
    expect(res.body.data).toEqual({
      amount: '1',
      from: 'USD',
      to: 'KWD',
      date: '2026-02-01',
      rate: '0.3085',
      inverted: false,
      effectiveDate: '2026-01-01',
      converted: '0.309',
    });
    const more = await as(org).get('/fx-rates/convert', { amount: '1234.56', from: 'USD', to: 'KWD', date: '2026-02-01' }).expect(200);
    expect(more.body.data.converted).toBe('380.862'); // 380.86176 → 380.862
  });

  it('when no rate applies for a conversion, then 404; a bad amount is 400', async () => {
    const org = await fxTenant('fx-none');
    const none = await as(org).get('/fx-rates/convert', { amount: '5', from: 'USD', to: 'KWD', date: '2026-02-01' });
    expect(none.status).toBe(404);
    const bad = await as(org).get('/fx-rates/convert', { amount: 'five', from: 'USD', to: 'KWD', date: '2026-02-01' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'query.amount' })]);
  });

  it('when rates are listed, then they are paged, filtered by currency and only the caller organisation\'s', async () => {
    const org = await fxTenant('fx-list');
    const a = await createRate(org, 'USD', 'EUR', '0.9', '2026-01-01');
    const b = await createRate(org, 'USD', 'EUR', '0.91', '2026-02-01');
    const c = await createRate(org, 'USD', 'GBP', '0.8', '2026-01-01');
    const d = await createRate(org, 'EUR', 'GBP', '0.85', '2026-01-01');
    await createRate(other, 'USD', 'EUR', '0.5', '2026-03-01');

    const all = await as(org).get('/fx-rates', { limit: '3' }).expect(200);
    expect(all.body.data).toMatchObject({ page: 1, limit: 3, total: 4 });
    const second = await as(org).get('/fx-rates', { limit: '3', page: '2' }).expect(200);
    expect(new Set([...ids(all), ...ids(second)])).toEqual(new Set([a.id, b.id, c.id, d.id]));

    const fromUsd = await as(org).get('/fx-rates', { fromCurrency: 'USD' }).expect(200);
    expect(ids(fromUsd).sort()).toEqual([a.id, b.id, c.id].sort());
    const usdToEur = await as(org).get('/fx-rates', { fromCurrency: 'USD', toCurrency: 'EUR' }).expect(200);
    expect(ids(usdToEur)).toEqual([b.id, a.id]); // latest effective date first
    const toGbp = await as(org).get('/fx-rates', { toCurrency: 'GBP' }).expect(200);
    expect(ids(toGbp).sort()).toEqual([c.id, d.id].sort());
  });

  it('when a rate is updated, then the new rate and date read back; a clash with another day of the pair is 409', async () => {
    const org = await fxTenant('fx-update');
    const first = await createRate(org, 'USD', 'EUR', '0.9', '2026-01-01');
    await createRate(org, 'USD', 'EUR', '0.95', '2026-02-01');
    const updated = await as(org).put(`/fx-rates/${first.id}`, { rate: 0.91, effectiveDate: '2026-01-15' });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id: first.id, fromCurrency: 'USD', toCurrency: 'EUR', rate: '0.91', effectiveDate: '2026-01-15' });
    const effective = await as(org).get('/fx-rates/effective', { from: 'USD', to: 'EUR', date: '2026-01-20' }).expect(200);
    expect(effective.body.data).toMatchObject({ rate: '0.91', fxRateId: first.id });

    const clash = await as(org).put(`/fx-rates/${first.id}`, { effectiveDate: '2026-02-01' });
    expect(clash.status).toBe(409);
    const empty = await as(org).put(`/fx-rates/${first.id}`, {});
    expect(empty.status).toBe(400);
    const zero = await as(org).put(`/fx-rates/${first.id}`, { rate: '0' });
    expect(zero.status).toBe(400);
  });

  it("when another organisation's rate is read or updated, then 404 and it is unchanged", async () => {
    const theirs = await createRate(other, 'AUD', 'NZD', '1.1', '2026-01-01');
    const read = await as(tenant).get(`/fx-rates/${theirs.id}`);
    expect(read.status).toBe(404);
    expect(read.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
    await as(tenant).put(`/fx-rates/${theirs.id}`, { rate: '2' }).expect(404);
    const effective = await as(tenant).get('/fx-rates/effective', { from: 'AUD', to: 'NZD', date: '2026-06-01' });
    expect(effective.status).toBe(404);
    const mine = await as(other).get(`/fx-rates/${theirs.id}`).expect(200);
    expect(mine.body.data.rate).toBe('1.1');
  });
});

describe('geography', () => {
  it('when countries are listed, then they are paged by code without overlap', async () => {
    const first = await as(tenant).get('/geography/countries', { limit: '100' }).expect(200);
    expect(first.body.data).toMatchObject({ page: 1, limit: 100, total: 249 });
    expect(first.body.data.items[0]).toEqual({ code: 'AD', alpha3: 'AND', numeric: '020', name: 'Andorra' });
    const pages = await Promise.all([2, 3].map((page) => as(tenant).get('/geography/countries', { limit: '100', page: String(page) })));
    expect(pages.map((res) => res.body.data.items.length)).toEqual([100, 49]);
    const codes = [first, ...pages].flatMap((res) => res.body.data.items.map((item: { code: string }) => item.code));
    expect(new Set(codes).size).toBe(249);
    expect(codes).toEqual([...codes].sort());
  });

  it('when countries are searched, then name, alpha-2 and alpha-3 match case-insensitively', async () => {
    const byName = await as(tenant).get('/geography/countries', { search: 'germ' }).expect(200);
    expect(byName.body.data.items.map((item: { code: string }) => item.code)).toEqual(['DE']);
    const byAlpha3 = await as(tenant).get('/geography/countries', { search: 'che' }).expect(200);
    expect(byAlpha3.body.data.items.map((item: { code: string }) => item.code)).toContain('CH');
    const none = await as(tenant).get('/geography/countries', { search: 'atlantis' }).expect(200);
    expect(none.body.data).toMatchObject({ items: [], total: 0 });
  });

  it('when the limit is above 100, then 400', async () => {
    const res = await as(tenant).get('/geography/countries', { limit: '101' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'query.limit' })]);
  });

  it("when a country's states are listed, then its ISO 3166-2 subdivisions come paged and searchable", async () => {
    const all = await as(tenant).get('/geography/countries/US/states', { limit: '100' }).expect(200);
    expect(all.body.data.total).toBeGreaterThanOrEqual(50);
    expect(all.body.data.items).toContainEqual({ code: 'US-CA', name: 'California', countryCode: 'US', parentCode: null });
    for (const item of all.body.data.items) expect(item.code).toMatch(/^US-/);

    const pages = await Promise.all([1, 2].map((page) => as(tenant).get('/geography/countries/de/states', { limit: '10', page: String(page) })));
    expect(pages.map((res) => res.body.data.items.length)).toEqual([10, 6]);
    expect(pages[0]!.body.data.total).toBe(16);
    const codes = pages.flatMap((res) => res.body.data.items.map((item: { code: string }) => item.code));
    expect(new Set(codes).size).toBe(16);

    const search = await as(tenant).get('/geography/countries/DE/states', { search: 'bayern' }).expect(200);
    expect(search.body.data.items).toEqual([{ code: 'DE-BY', name: 'Bayern', countryCode: 'DE', parentCode: null }]);
  });

  it('when a subdivision sits inside another, then parentCode names the enclosing one', async () => {
    const res = await as(tenant).get('/geography/countries/FR/states', { search: 'FR-01' }).expect(200);
    expect(res.body.data.items).toEqual([{ code: 'FR-01', name: 'Ain', countryCode: 'FR', parentCode: 'FR-ARA' }]);
  });

  it('when the country is unknown, then 404 with code 1002', async () => {
    for (const code of ['XX', 'USA', 'zz']) {
      const res = await as(tenant).get(`/geography/countries/${code}/states`);
      expect(res.status).toBe(404);
      expect(res.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
    }
  });
});

describe('currencies', () => {
  it('when currencies are listed, then they are paged and searchable by code or name, with minor units', async () => {
    const page = await as(tenant).get('/currencies', { limit: '5' }).expect(200);
    expect(page.body.data).toMatchObject({ page: 1, limit: 5, total: expect.any(Number) });
    expect(page.body.data.items).toHaveLength(5);
    expect(page.body.data.total).toBeGreaterThan(100);
    const yen = await as(tenant).get('/currencies', { search: 'yen' }).expect(200);
    expect(yen.body.data.items).toContainEqual(expect.objectContaining({ code: 'JPY', minorUnits: 0 }));
    const euro = await as(tenant).get('/currencies', { search: 'eur' }).expect(200);
    expect(euro.body.data.items).toContainEqual(expect.objectContaining({ code: 'EUR', minorUnits: 2 }));
  });

  it('when a currency is read by code, then its minor units come back; an unknown code is 404', async () => {
    const kwd = await as(tenant).get('/currencies/KWD').expect(200);
    expect(kwd.body.data).toMatchObject({ code: 'KWD', minorUnits: 3, name: expect.any(String) });
    const jpy = await as(tenant).get('/currencies/jpy').expect(200);
    expect(jpy.body.data).toMatchObject({ code: 'JPY', minorUnits: 0 });
    const unknown = await as(tenant).get('/currencies/ABC');
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
  });
});

describe('payments', () => {
  async function createCustomer(who: Tenant): Promise<string> {
    const res = await as(who).post('/customers', { name: `customer-${randomUUID().slice(0, 8)}` }).expect(201);
    return res.body.data.id;
  }

  const paidAt = '2026-11-05T10:30:00.000Z';

  /** An invoice row of the tenant's, enough for a payment to name. */
  async function invoiceOf(who: Tenant): Promise<string> {
    const id = newId('inv');
    await api.db('invoices').insert({ id, organisation_id: who.organisationId, currency: 'USD', date: '2026-11-01', status: 'raised' });
    return id;
  }

  it('when a payment names an invoice that is not in the organisation, then 404', async () => {
    const customerId = await createCustomer(tenant);
    const res = await as(tenant).post('/payments', { customerId, invoiceId: await invoiceOf(other), amount: 1, currency: 'USD', paidAt });
    expect(res.status).toBe(404);
  });

  it("when a payment of an invoice is in another currency, or from another customer, then 400 names the field", async () => {
    const customerId = await createCustomer(tenant);
    const invoiceId = newId('inv');
    await api.db('invoices').insert({ id: invoiceId, organisation_id: tenant.organisationId, customer_id: customerId, currency: 'EUR', date: '2026-11-01', status: 'raised' });
    const inUsd = await as(tenant).post('/payments', { customerId, invoiceId, amount: 10, currency: 'USD', paidAt }).expect(400);
    expect(inUsd.body.errors).toEqual([expect.objectContaining({ path: 'body.currency', message: "must be the invoice's currency, EUR" })]);
    // The currency is told first: 5,000 dollars are not compared with what the invoice owes in euros.
    await api.db('invoices').where({ id: invoiceId }).update({ subtotal: '20', total: '20' });
    const large = await as(tenant).post('/payments', { customerId, invoiceId, amount: 5000, currency: 'USD', paidAt }).expect(400);
    expect(large.body.errors).toEqual([expect.objectContaining({ path: 'body.currency' })]);
    const fromAnother = await as(tenant).post('/payments', { customerId: await createCustomer(tenant), invoiceId, amount: 10, currency: 'EUR', paidAt }).expect(400);
    expect(fromAnother.body.errors).toEqual([expect.objectContaining({ path: 'body.invoiceId', message: "is another customer's invoice" })]);
    await as(tenant).post('/payments', { customerId, invoiceId, amount: 10, currency: 'EUR', paidAt }).expect(201);
    // A draft owes nothing yet, a cancelled invoice nothing any more: a payment of either is refused.
    for (const status of ['draft', 'cancelled']) {
      await api.db('invoices').where({ id: invoiceId }).update({ status });
      const refused = await as(tenant).post('/payments', { customerId, invoiceId, amount: 10, currency: 'EUR', paidAt }).expect(409);
      expect(refused.body.errors[0].message).toContain(`the invoice is ${status}`);
    }
  });

  it('when a payment is created, then 201 with the amount at the currency\'s minor unit, and it reads back', async () => {
    const customerId = await createCustomer(tenant);
    const invoiceId = await invoiceOf(tenant);
    const created = await as(tenant).post('/payments', {
      customerId,
      invoiceId,
      amount: 100.5,
      currency: 'USD',
      paidAt: '2026-11-05T11:30:00+01:00',
      method: 'bank_transfer',
      reference: 'SEPA-123',
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^pay_/),
      customerId,
      invoiceId,
      amount: '100.50',
      currency: 'USD',
      paidAt,
      method: 'bank_transfer',
      reference: 'SEPA-123',
      creditNoteId: null,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const read = await as(tenant).get(`/payments/${created.body.data.id}`).expect(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it('when only the required fields are given, then invoiceId, method and reference are null', async () => {
    const customerId = await createCustomer(tenant);
    const created = await as(tenant).post('/payments', { customerId, amount: '5000', currency: 'JPY', paidAt }).expect(201);
    expect(created.body.data).toMatchObject({ amount: '5000', currency: 'JPY', invoiceId: null, method: null, reference: null });
    const kwd = await as(tenant).post('/payments', { customerId, amount: '1.25', currency: 'KWD', paidAt }).expect(201);
    expect(kwd.body.data.amount).toBe('1.250');
  });

  it.each([
    [{ amount: '100.5', currency: 'JPY' }, 'body.amount'],
    [{ amount: '1.2345', currency: 'KWD' }, 'body.amount'],
    [{ amount: '10.001', currency: 'USD' }, 'body.amount'],
    [{ amount: 0 }, 'body.amount'],
    [{ amount: '-3' }, 'body.amount'],
    [{ currency: 'ABC' }, 'body.currency'],
    [{ paidAt: '2026-11-05' }, 'body.paidAt'],
    [{ paidAt: 'yesterday' }, 'body.paidAt'],
    // Money that has not arrived yet, as mark-paid refuses a paid date to come.
    [{ paidAt: '9999-12-31T00:00:00Z' }, 'body.paidAt'],
  ])('when the body has %j, then 400 on %s and nothing is stored', async (override, path) => {
    const customerId = await createCustomer(tenant);
    const res = await as(tenant).post('/payments', { customerId, amount: '10', currency: 'USD', paidAt, ...override });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ code: 1001, path })]);
    const list = await as(tenant).get('/payments', { customerId }).expect(200);
    expect(list.body.data.total).toBe(0);
  });

  it("when the customer does not exist or is another organisation's, then 404", async () => {
    const unknown = await as(tenant).post('/payments', { customerId: 'cus_unknown', amount: '10', currency: 'USD', paidAt });
    expect(unknown.status).toBe(404);
    const theirs = await createCustomer(other);
    const foreign = await as(tenant).post('/payments', { customerId: theirs, amount: '10', currency: 'USD', paidAt });
    expect(foreign.status).toBe(404);
    expect(foreign.body.errors).toEqual([expect.objectContaining({ code: 1002 })]);
  });

  describe('Idempotency-Key', () => {
    it('when the same key is sent twice, then the first answers 201, the replay 200 with the same payment, and one is stored', async () => {
      const customerId = await createCustomer(tenant);
      const key = randomUUID();
      const body = { customerId, amount: '42.10', currency: 'EUR', paidAt, reference: 'idem' };
      const first = await as(tenant, { 'Idempotency-Key': key }).post('/payments', body);
      expect(first.status).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const replay = await as(tenant, { 'Idempotency-Key': key }).post('/payments', { ...body, amount: 42.1 });
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.data).toEqual(first.body.data);
      const list = await as(tenant).get('/payments', { customerId }).expect(200);
      expect(ids(list)).toEqual([first.body.data.id]);
    });

    it('when requests with the same key race, then exactly one payment is created', async () => {
      const customerId = await createCustomer(tenant);
      const key = randomUUID();
      const body = { customerId, amount: '7', currency: 'USD', paidAt };
      const results = await Promise.all(Array.from({ length: 5 }, () => as(tenant, { 'Idempotency-Key': key }).post('/payments', body)));
      expect(results.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 201]);
      expect(new Set(results.map((res) => res.body.data.id)).size).toBe(1);
      const list = await as(tenant).get('/payments', { customerId }).expect(200);
      expect(list.body.data.total).toBe(1);
    });

    it('when a key is reused with a different body, then 409 and nothing new is stored', async () => {
      const customerId = await createCustomer(tenant);
      const key = randomUUID();
      await as(tenant, { 'Idempotency-Key': key }).post('/payments', { customerId, amount: '10', currency: 'USD', paidAt }).expect(201);
      const changed = await as(tenant, { 'Idempotency-Key': key }).post('/payments', { customerId, amount: '11', currency: 'USD', paidAt });
      expect(changed.status).toBe(409);
      expect(changed.body.errors).toEqual([expect.objectContaining({ code: 1003 })]);
      const list = await as(tenant).get('/payments', { customerId }).expect(200);
      expect(list.body.data.total).toBe(1);
    });

    it('when another organisation uses the same key, then it gets its own payment', async () => {
      const key = randomUUID();
      const mine = await as(tenant, { 'Idempotency-Key': key }).post('/payments', { customerId: await createCustomer(tenant), amount: '1', currency: 'USD', paidAt });
      const theirs = await as(other, { 'Idempotency-Key': key }).post('/payments', { customerId: await createCustomer(other), amount: '1', currency: 'USD', paidAt });
      expect([mine.status, theirs.status]).toEqual([201, 201]);
      expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    });

    it('when the payment of a key was deleted, then a replay is 409 and does not create it again', async () => {
      const customerId = await createCustomer(tenant);
      const key = randomUUID();
      const body = { customerId, amount: '3', currency: 'USD', paidAt };
      const first = await as(tenant, { 'Idempotency-Key': key }).post('/payments', body).expect(201);
      await as(tenant).delete(`/payments/${first.body.data.id}`).expect(200);
      const replay = await as(tenant, { 'Idempotency-Key': key }).post('/payments', body);
      expect(replay.status).toBe(409);
      const list = await as(tenant).get('/payments', { customerId }).expect(200);
      expect(list.body.data.total).toBe(0);
    });

    it('when the key is too long, then 400', async () => {
      const res = await as(tenant, { 'Idempotency-Key': 'k'.repeat(256) }).post('/payments', {
        customerId: await createCustomer(tenant),
        amount: '1',
        currency: 'USD',
        paidAt,
      });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    });
  });

  it('when payments are listed, then they are paged, filtered by customer and invoice, newest paidAt first', async () => {
    const customerId = await createCustomer(tenant);
    const otherCustomerId = await createCustomer(tenant);
    const invoiceId = await invoiceOf(tenant);
    const make = async (customer: string, at: string, invoice?: string) =>
      (await as(tenant).post('/payments', { customerId: customer, invoiceId: invoice, amount: '1', currency: 'USD', paidAt: at }).expect(201)).body.data.id as string;
    const early = await make(customerId, '2026-01-01T00:00:00Z', invoiceId);
    const late = await make(customerId, '2026-03-01T00:00:00Z');
    const middle = await make(customerId, '2026-02-01T00:00:00Z', invoiceId);
    const elsewhere = await make(otherCustomerId, '2026-02-01T00:00:00Z', invoiceId);

    const byCustomer = await as(tenant).get('/payments', { customerId, limit: '2' }).expect(200);
    expect(byCustomer.body.data).toMatchObject({ page: 1, limit: 2, total: 3 });
    expect(ids(byCustomer)).toEqual([late, middle]);
    const secondPage = await as(tenant).get('/payments', { customerId, limit: '2', page: '2' }).expect(200);
    expect(ids(secondPage)).toEqual([early]);

    const byInvoice = await as(tenant).get('/payments', { invoiceId }).expect(200);
    expect(ids(byInvoice).sort()).toEqual([early, middle, elsewhere].sort());
    const both = await as(tenant).get('/payments', { invoiceId, customerId }).expect(200);
    expect(ids(both)).toEqual([middle, early]);
  });

  it('when a payment is updated, then method, reference, paidAt and amount change and read back', async () => {
    const customerId = await createCustomer(tenant);
    const created = await as(tenant).post('/payments', { customerId, amount: '10', currency: 'KWD', paidAt, method: 'card' }).expect(201);
    const id = created.body.data.id as string;
    const updated = await as(tenant).put(`/payments/${id}`, {
      method: 'wire',
      reference: 'REF-9',
      paidAt: '2026-11-06T00:00:00Z',
      amount: '12.345',
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id, method: 'wire', reference: 'REF-9', paidAt: '2026-11-06T00:00:00.000Z', amount: '12.345', currency: 'KWD' });
    const read = await as(tenant).get(`/payments/${id}`).expect(200);
    expect(read.body.data).toEqual(updated.body.data);

    const cleared = await as(tenant).put(`/payments/${id}`, { reference: null }).expect(200);
    expect(cleared.body.data).toMatchObject({ reference: null, method: 'wire' });

    const tooPrecise = await as(tenant).put(`/payments/${id}`, { amount: '1.2345' });
    expect(tooPrecise.status).toBe(400);
    expect(tooPrecise.body.errors).toEqual([expect.objectContaining({ path: 'body.amount' })]);
    await as(tenant).put(`/payments/${id}`, {}).expect(400);
    await as(tenant).put(`/payments/${id}`, { amount: '0' }).expect(400);
    const ahead = await as(tenant).put(`/payments/${id}`, { paidAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect([ahead.status, ahead.body.errors?.[0]?.path]).toEqual([400, 'body.paidAt']);
  });

  it('when a payment is lowered and raised at once, then the raise is judged against the lowered amount, and the invoice is never overpaid', async () => {
    const customerId = await createCustomer(tenant);
    const invoiceId = newId('inv');
    await api.db('invoices').insert({ id: invoiceId, organisation_id: tenant.organisationId, customer_id: customerId, currency: 'EUR', date: '2026-11-01', status: 'raised', subtotal: '119', total: '119' });
    for (let round = 0; round < 6; round += 1) {
      const created = await as(tenant).post('/payments', { customerId, invoiceId, amount: '100', currency: 'EUR', paidAt }).expect(201);
      const id = created.body.data.id as string;
      // Either order: 10 then 209 (owed 119 besides the 10), or 209 first (owed 119 besides the 100); 209 never fits.
      const [lowered, raised] = await Promise.all([as(tenant).put(`/payments/${id}`, { amount: '10' }), as(tenant).put(`/payments/${id}`, { amount: '209' })]);
      expect([round, lowered.status, raised.status]).toEqual([round, 200, 409]);
      expect((await as(tenant).get(`/payments/${id}`).expect(200)).body.data.amount).toBe('10.00');
      await as(tenant).delete(`/payments/${id}`).expect(200);
    }
  });

  it('when a payment is deleted, then it vanishes from reads and lists, and the row is kept', async () => {
    const customerId = await createCustomer(tenant);
    const created = await as(tenant).post('/payments', { customerId, amount: '10', currency: 'USD', paidAt }).expect(201);
    const id = created.body.data.id as string;
    const res = await as(tenant).delete(`/payments/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    await as(tenant).get(`/payments/${id}`).expect(404);
    await as(tenant).put(`/payments/${id}`, { method: 'x' }).expect(404);
    await as(tenant).delete(`/payments/${id}`).expect(404);
    const list = await as(tenant).get('/payments', { customerId }).expect(200);
    expect(list.body.data).toMatchObject({ items: [], total: 0 });
    const row = await api.db('payments').where({ id }).first();
    expect(row.deleted_at).toBeInstanceOf(Date);
  });

  it("when another organisation's payment is read, updated or deleted, then 404, and lists never show it", async () => {
    const theirCustomer = await createCustomer(other);
    const reference = `secret-${randomUUID()}`;
    const theirs = await as(other).post('/payments', { customerId: theirCustomer, amount: '99', currency: 'USD', paidAt, reference }).expect(201);
    const id = theirs.body.data.id as string;
    await as(tenant).get(`/payments/${id}`).expect(404);
    await as(tenant).put(`/payments/${id}`, { reference: 'hijacked' }).expect(404);
    await as(tenant).delete(`/payments/${id}`).expect(404);
    for (const query of [{ search: reference }, { customerId: theirCustomer }] as Array<Record<string, string>>) {
      const list = await as(tenant).get('/payments', query).expect(200);
      expect(list.body.data).toMatchObject({ items: [], total: 0 });
    }
    const still = await as(other).get(`/payments/${id}`).expect(200);
    expect(still.body.data.reference).toBe(reference);
  });
});
