import { Decimal } from '../../src/domain/money';
import { createProgressiveBillingService } from '../../src/modules/invoice-runs';
import { progressiveBillingWorkflowId } from '../../workflows/ids';
import { createMeteredContract, invoicesOfRun } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { utcMonthOf } from '../support/calendar';

/**
 * Progressive billing through the real stack: usage ingested through POST /events/batch, the relay's
 * subscriber, the contract's workflow and its one-transaction check; then the month's invoice run.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'progressive');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

const UNIT_PRICE = '0.25';

interface Metered {
  contractId: string;
  contractPlanId: string;
  entityId: string;
  metric: string;
}

type Item = { quantity: string; price: string; title: string };
type Invoice = { id: string; status: string; contractPlanId: string; items: Item[]; data: Record<string, unknown> };

/** The billing period open now: the current UTC month. */
const month = utcMonthOf();

/** A monthly plan with one metered item at 0.25 per call, on an active contract from this month's first day with the thresholds given. */
async function contractWith(thresholds: Array<string | number>): Promise<Metered> {
  const made = await createMeteredContract(api, tenant, {
    label: 'Progressive',
    startDate: month.firstDay,
    items: (meterId) => [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: UNIT_PRICE, meterId }],
    contract: { progressiveBilling: { thresholds } },
  });
  expect(made.contract.progressiveBilling).toEqual({ thresholds: thresholds.map(String) });
  return made;
}

/** Usage of this month, a minute before now at the latest (its first instant at the earliest), so that the open period counts it. */
const thisMonthMoment = () => new Date(Math.max(Date.now() - 60_000, month.start.getTime())).toISOString();

async function ingest(contract: Metered, values: number[]): Promise<void> {
  const events = values.map((value) => ({ CustomerEntityId: contract.entityId, metric: contract.metric, value, timestamp: thisMonthMoment() }));
  const res = await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  expect(res.body.data.summary).toMatchObject({ success: values.length, failed: 0 });
}

/**
 * Every check asked for has run: the relay has handed on every event of the organisation (its subscriber
 * started or signalled the contract's workflow in that same transaction), and the workflow's latest run
 * has completed.
 */
async function settled(contract: Metered): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pending = await api.db('webhook_events').where({ organisation_id: tenant.organisationId }).whereNull('dispatched_at').count<Array<{ count: string }>>('* as count');
    if (Number(pending[0]!.count) === 0) {
      const status = await api.temporal.workflows
        .handle('progressiveBillingWorkflow', progressiveBillingWorkflowId(contract.contractId))
        .describe()
        .then((description) => description.status.name, () => 'NOT_FOUND');
      if (status === 'COMPLETED') return;
      if (status !== 'RUNNING') throw new Error(`the progressive billing workflow is ${status}`);
    }
    if (Date.now() > deadline) throw new Error('progressive billing did not settle within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function invoicesOf(contract: Metered): Promise<Invoice[]> {
  const res = await api.http().get('/invoices').set(system()).query({ contractPlanId: contract.contractPlanId, limit: 100 }).expect(200);
  return (res.body.data.items as Invoice[]).sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** An invoice's pre-tax amount: each line's quantity × price rounded half-up to the cent, added up. */
const preTax = (invoice: Invoice) => invoice.items.reduce((sum, item) => sum.plus(new Decimal(item.quantity).times(item.price).toDecimalPlaces(2, Decimal.ROUND_HALF_UP)), new Decimal(0));

/** What the calls cost at the unit price: the test's own oracle. */
const cost = (units: number) => new Decimal(units).times(UNIT_PRICE);

const progressiveOf = (invoices: Invoice[]) => invoices.filter((invoice) => invoice.data.progressiveBilling !== undefined);

describe('progressive billing', () => {
  it('with thresholds 100 and 500, batches of usage make two progressive invoices, and the month-end run bills the rest: the three add up to the month exactly', async () => {
    const contract = await contractWith(['100', '500']);

    await ingest(contract, [120, 80]); // 200 calls: 50.00, below 100
    await settled(contract);
    expect(await invoicesOf(contract)).toEqual([]);

    await ingest(contract, [300]); // 500 calls: 125.00, crosses 100
    await settled(contract);
    const [first, ...none] = await invoicesOf(contract);
    expect(none).toEqual([]);
    expect(first!.data.progressiveBilling).toEqual({ periodStart: month.firstDay, thresholds: ['100'], usageTotal: '125.00' });
    expect(preTax(first!).toFixed(2)).toBe(cost(500).toFixed(2));
    expect(first!.status).toBe('draft');
    // What current-usage calls the difference is now nothing: the progressive invoice charged it.
    const after = (await api.http().get(`/contracts/${contract.contractId}/current-usage`).set(system()).expect(200)).body.data;
    expect(after).toMatchObject({ total: '125.00', charged: '125.00', due: '0.00' });
    // It bills the usage as rated when the threshold was crossed: recomputing it from the plan is refused.
    const sync = await api.http().post(`/invoices/${first!.id}/sync-items`).set(system());
    expect(sync.status).toBe(409);
    expect(sync.body.errors[0].message).toMatch(/progressive billing/);
    expect(preTax((await invoicesOf(contract))[0]!).toFixed(2)).toBe(cost(500).toFixed(2));

    await ingest(contract, [1000, 700]); // 2200 calls: 550.00, crosses 500
    await settled(contract);
    const second = progressiveOf(await invoicesOf(contract)).filter((invoice) => invoice.id !== first!.id);
    expect(second).toHaveLength(1);
    expect(second[0]!.data.progressiveBilling).toEqual({ periodStart: month.firstDay, thresholds: ['500'], usageTotal: '550.00' });
    expect(preTax(second[0]!).toFixed(2)).toBe(cost(1700).toFixed(2));

    await ingest(contract, [100]); // 2300 calls: 575.00, no new threshold
    await settled(contract);
    expect(await invoicesOf(contract)).toHaveLength(2);

    const [final] = await invoicesOfRun<Invoice>(api, tenant, contract.contractId, month.nextFirstDay);
    expect(preTax(final!).toFixed(2)).toBe(cost(100).toFixed(2));
    const all = await invoicesOf(contract);
    expect(all).toHaveLength(3);
    const sum = all.reduce((total, invoice) => total.plus(preTax(invoice)), new Decimal(0));
    expect(sum.toFixed(2)).toBe(cost(2300).toFixed(2));
    const claims = await api.db('progressive_billing_claims').where({ contract_id: contract.contractId }).orderBy('threshold');
    expect(claims.map((claim: { threshold: string; invoice_id: string }) => [new Decimal(claim.threshold).toFixed(), claim.invoice_id])).toEqual([
      ['100', first!.id],
      ['500', second[0]!.id],
    ]);
  });

  it("with a coupon, the progressive invoice is not discounted and the period's own invoice is, as the first billing of its period", async () => {
    const contract = await contractWith(['100']);
    const code = `HALFONCE${Date.now()}`;
    await api.http().post('/coupons').set(admin()).send({ code, percentOff: '50', duration: 'once' }).expect(201);
    await api.http().post(`/contracts/${contract.contractId}/coupons`).set(system()).send({ code }).expect(201);
    await ingest(contract, [500]); // 125.00: crosses 100
    await settled(contract);
    const [progressive] = await invoicesOf(contract);
    expect(progressive!.items.map((item) => item.title)).toEqual(['API calls']);
    await ingest(contract, [100]); // 25.00 more
    await settled(contract);

    const [final] = await invoicesOfRun<Invoice>(api, tenant, contract.contractId, month.nextFirstDay);
    expect(final!.items.map((item) => [item.title, item.quantity, item.price])).toEqual([
      [`API calls: usage of ${month.firstDay} to ${month.lastDay}`, '100', UNIT_PRICE],
      [`Coupon ${code}`, '1', '-12.5'],
    ]);
    const coupons = (await api.http().get(`/contracts/${contract.contractId}/coupons`).set(system()).expect(200)).body.data;
    expect(coupons).toMatchObject([{ periodsUsed: 1, active: false }]);
  });

  it('one jump across several thresholds makes one invoice that claims them all; with auto-raise on it is raised, and invoice.created says why', async () => {
    await api.http().put('/organisation/settings').set(admin()).send({ autoRaiseGeneratedInvoices: true }).expect(200);
    try {
      const contract = await contractWith([10, 20, '30.5', 1000]);
      await ingest(contract, [200]); // 50.00: crosses 10, 20 and 30.5
      await settled(contract);
      const [invoice, ...none] = await invoicesOf(contract);
      expect(none).toEqual([]);
      expect(preTax(invoice!).toFixed(2)).toBe('50.00');
      const claims = await api.db('progressive_billing_claims').where({ contract_id: contract.contractId }).orderBy('threshold');
      expect(claims.map((claim: { threshold: string; invoice_id: string }) => [new Decimal(claim.threshold).toFixed(), claim.invoice_id])).toEqual([
        ['10', invoice!.id],
        ['20', invoice!.id],
        ['30.5', invoice!.id],
      ]);
      const raised = async () => (await api.http().get(`/invoices/${invoice!.id}`).set(system()).expect(200)).body.data.status;
      const deadline = Date.now() + 20_000;
      while ((await raised()) === 'draft' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await raised()).toBe('raised');
      const created = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'invoice.created' }).whereRaw("payload->'data'->>'id' = ?", [invoice!.id]).first();
      expect(created.payload.data).toMatchObject({ id: invoice!.id, reason: 'progressive_threshold', threshold: '30.5', thresholds: ['10', '20', '30.5'] });
      // With nothing new since, the month's run has nothing to bill; 40 calls more make its invoice.
      expect(await invoicesOfRun<Invoice>(api, tenant, contract.contractId, month.nextFirstDay)).toEqual([]);
      await ingest(contract, [40]);
      await settled(contract);
      const [final] = await invoicesOfRun<Invoice>(api, tenant, contract.contractId, month.nextFirstDay);
      expect(preTax(final!).toFixed(2)).toBe(cost(40).toFixed(2));
      const byRun = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'invoice.created' }).whereRaw("payload->'data'->>'id' = ?", [final!.id]).first();
      expect(byRun.payload.data).toMatchObject({ reason: 'invoice_run' });
      expect(byRun.payload.data.threshold).toBeUndefined();
    } finally {
      await api.http().put('/organisation/settings').set(admin()).send({ autoRaiseGeneratedInvoices: false }).expect(200);
    }
  });

  it('ten batches ingested at once across a threshold make exactly one invoice for it', async () => {
    const contract = await contractWith([100]);
    // Ten batches of 50 calls (12.50 each): 125.00 in all, crossing 100 somewhere among them.
    await Promise.all(Array.from({ length: 10 }, () => ingest(contract, [50])));
    await settled(contract);
    const progressive = progressiveOf(await invoicesOf(contract));
    expect(progressive).toHaveLength(1);
    expect(preTax(progressive[0]!).gte(100)).toBe(true);
    expect(await api.db('progressive_billing_claims').where({ contract_id: contract.contractId }).count<Array<{ count: string }>>('* as count')).toEqual([{ count: '1' }]);
    const [final] = await invoicesOfRun<Invoice>(api, tenant, contract.contractId, month.nextFirstDay);
    expect(preTax(progressive[0]!).plus(final ? preTax(final) : 0).toFixed(2)).toBe(cost(500).toFixed(2));
  });

  it('ten checks of one crossing at once, beside the workflow, claim the threshold once: one invoice', async () => {
    const contract = await contractWith([100]);
    await ingest(contract, [480]); // 120.00
    const service = createProgressiveBillingService(api.db);
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => service.bill({ organisationId: tenant.organisationId, contractId: contract.contractId })));
    await settled(contract);
    const progressive = progressiveOf(await invoicesOf(contract));
    expect(progressive).toHaveLength(1);
    expect(preTax(progressive[0]!).toFixed(2)).toBe(cost(480).toFixed(2));
    // The invoice is one of these checks' or the workflow's; no two checks made one.
    expect(outcomes.filter((outcome) => outcome.invoiceIds.length > 0).length).toBeLessThanOrEqual(1);
    expect(await api.db('progressive_billing_claims').where({ contract_id: contract.contractId }).count<Array<{ count: string }>>('* as count')).toEqual([{ count: '1' }]);
  });

  it('refuses thresholds that are not positive, not strictly increasing, too many or finer than the currency (400)', async () => {
    const contract = await contractWith([100]);
    for (const thresholds of [[0], [100, 100], [200, 100], Array.from({ length: 21 }, (_, i) => i + 1), ['10.001'], []]) {
      const res = await api.http().put(`/contracts/${contract.contractId}`).set(system()).send({ progressiveBilling: { thresholds } });
      expect([res.status, JSON.stringify(thresholds)]).toEqual([400, JSON.stringify(thresholds)]);
    }
    const off = await api.http().put(`/contracts/${contract.contractId}`).set(system()).send({ progressiveBilling: null }).expect(200);
    expect(off.body.data.progressiveBilling).toBeNull();
    const on = await api.http().put(`/contracts/${contract.contractId}`).set(system()).send({ progressiveBilling: { thresholds: ['50.25', 75] } }).expect(200);
    expect(on.body.data.progressiveBilling).toEqual({ thresholds: ['50.25', '75'] });
  });
});
