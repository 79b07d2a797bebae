import { randomUUID } from 'node:crypto';
import { invoicesOfRun } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'coupons');
  // The contracts bill in euros: no FX rate needed.
  await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ baseCurrency: 'EUR' }).expect(200);
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

/** A customer on a monthly plan of two fees, 100 and 50 a month, from `startDate`, with 20 % VAT on the first fee only. */
async function contractFrom(startDate: string): Promise<{ contractId: string; items: string[] }> {
  const customer = await api.http().post('/customers').set(system()).send({ name: `Coupon customer ${randomUUID().slice(0, 8)}`, currency: 'EUR' }).expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin())
    .send({
      name: `Plan ${randomUUID().slice(0, 8)}`,
      currency: 'EUR',
      billingPeriod: 'monthly',
      items: [
        { name: 'Platform fee', pricingModel: 'flat', unitPrice: '100' },
        { name: 'Support', pricingModel: 'flat', unitPrice: '50' },
      ],
    })
    .expect(201);
  const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'EUR', startDate, plans: [{ planId: plan.body.data.id }] }).expect(201);
  const items = plan.body.data.items.map((item: { id: string }) => item.id) as string[];
  await api.http().post(`/contracts/${contract.body.data.id}/taxes`).set(admin()).send({ name: 'VAT', rate: '20', appliesTo: [items[0]] }).expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
  return { contractId: contract.body.data.id, items };
}

/** Runs an invoice run for the contract on `billingDate` to its end; the invoices it made, raised. */
async function run(contractId: string, billingDate: string): Promise<Array<Record<string, unknown> & { items: Array<Record<string, string>>; subtotal: string; taxTotal: string }>> {
  const raised = [];
  for (const invoice of await invoicesOfRun<{ id: string }>(api, tenant, contractId, billingDate)) raised.push((await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200)).body.data);
  return raised;
}

describe('coupons', () => {
  it('when a 10 % coupon repeating for 3 periods is on a contract, then the first three monthly runs discount its invoices before tax and the fourth does not', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'TENOFF3', percentOff: '10', duration: 'repeating', durationPeriods: 3 }).expect(201);
    const { contractId, items } = await contractFrom('2026-07-01');
    const applied = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'TENOFF3' }).expect(201);
    expect(applied.body.data).toMatchObject({ periodsUsed: 0, active: true, coupon: { code: 'TENOFF3', redemptions: 1 } });

    const subtotals: string[] = [];
    for (const billingDate of ['2026-07-01', '2026-08-01', '2026-09-01', '2026-10-01']) {
      const invoices = await run(contractId, billingDate);
      expect(invoices).toHaveLength(1);
      const [invoice] = invoices;
      subtotals.push(`${invoice!.subtotal}/${invoice!.taxTotal}`);
      const discounts = invoice!.items.filter((item) => item.title === 'Coupon TENOFF3');
      if (billingDate < '2026-10-01') {
        // One discount line per plan item: the VAT on the platform fee sees the fee discounted.
        expect(discounts.map((item) => [item.planItemId, item.amount])).toEqual([
          [items[0], '-10.00'],
          [items[1], '-5.00'],
        ]);
      } else {
        expect(discounts).toEqual([]);
      }
    }
    expect(subtotals).toEqual(['135.00/18.00', '135.00/18.00', '135.00/18.00', '150.00/20.00']);
    const after = await api.http().get(`/contracts/${contractId}/coupons`).set(system()).expect(200);
    expect(after.body.data).toMatchObject([{ periodsUsed: 3, active: false }]);
  });

  it('when an amount coupon once is on a contract, then one run takes it off across the items in proportion, and only once', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'WELCOME30', amountOff: '30', currency: 'EUR', duration: 'once' }).expect(201);
    const { contractId } = await contractFrom('2026-07-01');
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'WELCOME30' }).expect(201);
    const [first] = await run(contractId, '2026-07-01');
    expect(first!.items.filter((item) => item.title === 'Coupon WELCOME30').map((item) => item.amount)).toEqual(['-20.00', '-10.00']);
    expect(first!.subtotal).toBe('120.00');
    const [second] = await run(contractId, '2026-08-01');
    expect(second!.subtotal).toBe('150.00');
  });

  it('when a run catches up three months with a once coupon, then only the first month of each item is discounted, and the coupon is spent', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'FIRSTMONTH', percentOff: '20', duration: 'once' }).expect(201);
    const { contractId } = await contractFrom('2026-07-01');
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'FIRSTMONTH' }).expect(201);
    const [invoice] = await run(contractId, '2026-09-01');
    const fees = invoice!.items.filter((item) => item.title !== 'Coupon FIRSTMONTH');
    expect(fees).toHaveLength(6);
    const discounts = invoice!.items.filter((item) => item.title === 'Coupon FIRSTMONTH');
    expect(discounts.map((item) => [item.amount, item.fromDate, item.toDate, item.couponId])).toEqual([
      ['-20.00', '2026-07-01', '2026-07-31', expect.stringMatching(/^cpn_/)],
      ['-10.00', '2026-07-01', '2026-07-31', expect.stringMatching(/^cpn_/)],
    ]);
    expect(invoice!.subtotal).toBe('420.00');
    const after = await api.http().get(`/contracts/${contractId}/coupons`).set(system()).expect(200);
    expect(after.body.data).toMatchObject([{ periodsUsed: 1, active: false }]);
  });

  it('when a once coupon that served is removed and applied again, then it discounts nothing more and counts no second redemption', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'ONCEAGAIN', percentOff: '10', duration: 'once', maxRedemptions: 1 }).expect(201);
    const { contractId } = await contractFrom('2026-07-01');
    const applied = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'ONCEAGAIN' }).expect(201);
    const [july] = await run(contractId, '2026-07-01');
    expect(july!.items.filter((item) => item.title === 'Coupon ONCEAGAIN').map((item) => item.amount)).toEqual(['-10.00', '-5.00']);
    expect([july!.subtotal, july!.taxTotal]).toEqual(['135.00', '18.00']);

    await api.http().delete(`/contracts/${contractId}/coupons/${applied.body.data.id}`).set(system()).expect(200);
    // The same redemption as before, on the same contract: its one period is served already.
    const again = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'ONCEAGAIN' }).expect(201);
    expect(again.body.data).toMatchObject({ periodsUsed: 1, active: false, coupon: { redemptions: 1 } });
    const [august] = await run(contractId, '2026-08-01');
    expect(august!.items.filter((item) => item.title === 'Coupon ONCEAGAIN')).toEqual([]);
    expect([august!.subtotal, august!.taxTotal]).toEqual(['150.00', '20.00']);
    const listed = await api.http().get(`/contracts/${contractId}/coupons`).set(system()).expect(200);
    expect(listed.body.data).toMatchObject([{ id: again.body.data.id, periodsUsed: 1, active: false }]);
  });

  it('when a coupon repeating for 2 periods is removed after one and applied again later, then it serves one more period only', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'TWICE', percentOff: '10', duration: 'repeating', durationPeriods: 2 }).expect(201);
    const { contractId } = await contractFrom('2026-07-01');
    const applied = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'TWICE' }).expect(201);
    const subtotals = [(await run(contractId, '2026-07-01'))[0]!.subtotal];
    await api.http().delete(`/contracts/${contractId}/coupons/${applied.body.data.id}`).set(system()).expect(200);
    subtotals.push((await run(contractId, '2026-08-01'))[0]!.subtotal);
    const again = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'TWICE' }).expect(201);
    expect(again.body.data).toMatchObject({ periodsUsed: 1, active: true, coupon: { redemptions: 1 } });
    for (const billingDate of ['2026-09-01', '2026-10-01']) subtotals.push((await run(contractId, billingDate))[0]!.subtotal);
    expect(subtotals).toEqual(['135.00', '150.00', '135.00', '150.00']);
    const listed = await api.http().get(`/contracts/${contractId}/coupons`).set(system()).expect(200);
    expect(listed.body.data).toMatchObject([{ periodsUsed: 2, active: false }]);
  });

  it('when a coupon is over its redemptions, expired, in another currency or applied twice, then 409; a SystemUser cannot create one', async () => {
    await api.http().post('/coupons').set(admin()).send({ code: 'ONLYONE', percentOff: 5, duration: 'forever', maxRedemptions: 1 }).expect(201);
    // Born expired is a mistake (400); a coupon expires by having its expiry moved to the past.
    const bornExpired = await api.http().post('/coupons').set(admin()).send({ code: 'OLD', percentOff: 5, duration: 'forever', expiresAt: '2020-01-01T00:00:00Z' });
    expect([bornExpired.status, bornExpired.body.errors?.[0]?.path]).toEqual([400, 'body.expiresAt']);
    const old = await api.http().post('/coupons').set(admin()).send({ code: 'OLD', percentOff: 5, duration: 'forever', expiresAt: '2099-01-01T00:00:00Z' }).expect(201);
    await api.http().put(`/coupons/${old.body.data.id}`).set(admin()).send({ expiresAt: '2020-01-01T00:00:00Z' }).expect(200);
    await api.http().post('/coupons').set(admin()).send({ code: 'DOLLARS', amountOff: 5, currency: 'USD', duration: 'forever' }).expect(201);
    const { contractId } = await contractFrom('2026-07-01');
    const other = await contractFrom('2026-07-01');
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'ONLYONE' }).expect(201);
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'ONLYONE' }).expect(409);
    await api.http().post(`/contracts/${other.contractId}/coupons`).set(system()).send({ code: 'ONLYONE' }).expect(409);
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'OLD' }).expect(409);
    await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'DOLLARS' }).expect(409);
    const unknown = await api.http().post(`/contracts/${contractId}/coupons`).set(system()).send({ code: 'NOPE' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].path).toBe('body.code');
    await api.http().post('/coupons').set(admin()).send({ code: 'ONLYONE', percentOff: 5, duration: 'once' }).expect(409);
    const both = await api.http().post('/coupons').set(admin()).send({ code: 'BOTH', percentOff: 5, amountOff: 5, currency: 'EUR', duration: 'once' });
    expect(both.status).toBe(400);
    // What a choice makes due is required when it is missing; given without that choice, it says with which alone.
    const refused = async (body: object) => (await api.http().post('/coupons').set(admin()).send({ code: 'R1', ...body }).expect(400)).body.errors;
    expect(await refused({ percentOff: 5, duration: 'repeating' })).toEqual([{ code: 1001, path: 'body.durationPeriods', message: 'is required with duration repeating' }]);
    expect(await refused({ percentOff: 5, duration: 'once', durationPeriods: 2 })).toEqual([{ code: 1001, path: 'body.durationPeriods', message: 'is given with duration repeating, and only then' }]);
    expect(await refused({ amountOff: 5, duration: 'once' })).toEqual([{ code: 1001, path: 'body.currency', message: 'is required with amountOff' }]);
    await api.http().post('/coupons').set(system()).send({ code: 'MINE', percentOff: 5, duration: 'once' }).expect(403);
  });
});
