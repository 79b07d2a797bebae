import { createBillingFixture, type BillingFixture } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;
let first: BillingFixture;
let second: BillingFixture;

const system = () => bearer(tenant.systemToken);

/** An invoice of one line for the one day `date`, raised: its revenue is recognised in that day's month. */
async function raised(fixture: BillingFixture, date: string, price: number): Promise<string> {
  const created = await api
    .http()
    .post('/invoices')
    .set(system())
    .send({
      contractPlanId: fixture.contractPlanId,
      invoiceData: { date, fromDate: date, toDate: date },
      invoiceItems: [{ title: 'Service', description: `Service on ${date}`, quantity: 1, price, fromDate: date, toDate: date }],
    })
    .expect(201);
  await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system()).send({}).expect(200);
  return created.body.data.id;
}

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'reporting');
  first = await createBillingFixture(api, tenant);
  second = await createBillingFixture(api, tenant);
  await raised(first, '2026-09-10', 100);
  await raised(first, '2026-10-05', 250);
  await raised(second, '2026-10-20', 400);
  const cancelled = await raised(second, '2026-10-21', 1000);
  await api.http().put(`/invoices/${cancelled}`).set(bearer(tenant.adminToken)).send({ status: 'cancelled' }).expect(200);
});
afterAll(() => api.close());

describe('reading what finance asks about', () => {
  it('when revenue is summed for October, then each currency has what GET /revenue lists for those months, not reversed, with the customers ranked', async () => {
    const summary = await api.http().get('/revenue/summary').query({ from: '2026-10-15', to: '2026-10-31' }).set(system()).expect(200);
    expect(summary.body.data).toEqual({
      from: '2026-10-01',
      to: '2026-10-31',
      currencies: [
        {
          currency: 'USD',
          amount: '650.00',
          topCustomers: [
            { customerId: second.customerId, name: expect.any(String), amount: '400.00' },
            { customerId: first.customerId, name: expect.any(String), amount: '250.00' },
          ],
        },
      ],
    });
    // The same figure from the records themselves.
    const records = (await api.http().get('/revenue').query({ limit: 100 }).set(system()).expect(200)).body.data.items as Array<{ period: string; amount: string; status: string }>;
    const october = records.filter((record) => record.period === '2026-10-01' && record.status !== 'reversed').reduce((sum, record) => sum + Number(record.amount), 0);
    expect(october.toFixed(2)).toBe('650.00');
    const top = await api.http().get('/revenue/summary').query({ from: '2026-09-01', to: '2026-10-31', top: 1 }).set(system()).expect(200);
    expect(top.body.data.currencies[0]).toMatchObject({ amount: '750.00', topCustomers: [{ customerId: second.customerId, amount: '400.00' }] });
    await api.http().get('/revenue/summary').query({ from: '2026-10-31', to: '2026-10-01' }).set(system()).expect(400);
  });

  it('when collections are asked for one customer, then they count only that customer’s invoices', async () => {
    const all = await api.http().get('/collections').set(system()).expect(200);
    const one = await api.http().get('/collections').query({ customerId: first.customerId }).set(system()).expect(200);
    expect(all.body.data.currencies).toMatchObject([{ currency: 'USD', total: '750.00', invoices: 3 }]);
    expect(one.body.data.currencies).toMatchObject([{ currency: 'USD', total: '350.00', invoices: 2 }]);
    const none = await api.http().get('/collections').query({ customerId: 'cus_nobody' }).set(system()).expect(200);
    expect(none.body.data.currencies).toEqual([]);
  });

  it('when invoices are listed by date, then only those dated within the days come back', async () => {
    const october = await api.http().get('/invoices').query({ from: '2026-10-01', to: '2026-10-31', status: 'raised' }).set(system()).expect(200);
    expect(october.body.data.items.map((invoice: { date: string; total: string }) => [invoice.date, invoice.total]).sort()).toEqual([
      ['2026-10-05', '250.00'],
      ['2026-10-20', '400.00'],
    ]);
    const backwards = await api.http().get('/invoices').query({ from: '2026-10-31', to: '2026-10-01' }).set(system());
    expect(backwards.status).toBe(400);
    expect(backwards.body.errors).toEqual([expect.objectContaining({ path: 'query.to' })]);
  });
});
