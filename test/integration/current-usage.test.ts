import { Decimal } from '../../src/domain/money';
import { createMeteredContract, invoicesOfRun } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { earlierThisMonth, utcDaysFromToday, utcMonthOf } from '../support/calendar';

/**
 * GET /contracts/{id}/current-usage: the usage charges of the billing period that holds a day, through
 * now, rated by the engine from the events ingested, and the ledger's view of them.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'current-usage');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);

const UNIT_PRICE = '0.37';

interface Metered {
  contractId: string;
  contractPlanId: string;
  itemId: string;
  entityId: string;
  metric: string;
}

/** A monthly plan with one metered item at 0.37 per call, on an active contract from `startDate`. */
async function meteredContract(startDate: string): Promise<Metered> {
  const made = await createMeteredContract(api, tenant, {
    label: 'Usage',
    startDate,
    items: (meterId) => [{ name: 'API calls', pricingModel: 'per_unit', unitPrice: UNIT_PRICE, meterId }],
  });
  return { ...made, itemId: made.itemIds[0]! };
}

async function ingest(contract: Metered, events: Array<{ value: number; timestamp: string }>): Promise<void> {
  const res = await api
    .http()
    .post('/events/batch')
    .set(system())
    .send({ events: events.map((event) => ({ CustomerEntityId: contract.entityId, metric: contract.metric, ...event })) })
    .expect(200);
  expect(res.body.data.summary).toMatchObject({ success: events.length, failed: 0 });
}

/** What the events cost at the unit price, rounded half-up to the cent: the test's own oracle. */
const cost = (values: number[]) => new Decimal(values.reduce((sum, value) => sum + value, 0)).times(UNIT_PRICE).toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);

const currentUsage = async (contractId: string, date?: string) => (await api.http().get(`/contracts/${contractId}/current-usage`).query(date ? { date } : {}).set(system()).expect(200)).body.data;

describe('period-to-date usage', () => {
  it('rates the events of the open billing period ingested so far: lines, total, nothing charged yet, all of it due', async () => {
    // The period that holds today: the current UTC month, whichever it is.
    const month = utcMonthOf();
    const contract = await meteredContract(month.firstDay);
    const aMinuteAgo = new Date(Math.max(Date.now() - 60_000, month.start.getTime())).toISOString();
    const values = [10, 25, 7];
    const [first, second] = earlierThisMonth(2);
    await ingest(contract, [
      { value: values[0]!, timestamp: first! },
      { value: values[1]!, timestamp: second! },
      { value: values[2]!, timestamp: aMinuteAgo },
    ]);
    const usage = await currentUsage(contract.contractId);
    const amount = cost(values);
    expect(usage).toMatchObject({ contractId: contract.contractId, currency: 'USD', total: amount, charged: '0.00', due: amount });
    expect(usage.plans).toEqual([
      {
        contractPlanId: contract.contractPlanId,
        currency: 'USD',
        periodStart: month.firstDay,
        periodEnd: month.lastDay,
        lines: [{ planItemId: contract.itemId, name: 'API calls', quantity: '42', amount }],
        total: amount,
        charged: '0.00',
        due: amount,
      },
    ]);
  });

  it("after an invoice charged a period's usage, what is due is only the usage that arrived since", async () => {
    const contract = await meteredContract('2026-10-01');
    await ingest(contract, [
      { value: 120, timestamp: '2026-10-05T10:00:00Z' },
      { value: 33, timestamp: '2026-10-20T10:00:00Z' },
    ]);
    const before = await currentUsage(contract.contractId, '2026-10-15');
    expect(before).toMatchObject({ total: cost([120, 33]), charged: '0.00', due: cost([120, 33]) });
    expect(before.plans[0]).toMatchObject({ periodStart: '2026-10-01', periodEnd: '2026-10-31' });

    const [invoice] = await invoicesOfRun<{ items: Array<{ quantity: string; price: string }> }>(api, tenant, contract.contractId, '2026-11-01');
    expect(invoice!.items).toEqual([expect.objectContaining({ quantity: '153', price: UNIT_PRICE })]);
    const billed = await currentUsage(contract.contractId, '2026-10-15');
    expect(billed).toMatchObject({ total: cost([120, 33]), charged: cost([120, 33]), due: '0.00' });

    // Late usage of October: the total grows, the ledger keeps what was charged, the difference is due.
    await ingest(contract, [{ value: 9, timestamp: '2026-10-30T10:00:00Z' }]);
    const late = await currentUsage(contract.contractId, '2026-10-31');
    expect(late).toMatchObject({ total: cost([120, 33, 9]), charged: cost([120, 33]), due: cost([9]) });
    // The period that holds today, past October, has nothing.
    expect(await currentUsage(contract.contractId)).toMatchObject({ total: '0.00', charged: '0.00', due: '0.00' });
  });

  it('answers 404 for a contract of another organisation or none, and 400 for a date past the horizon', async () => {
    const missing = await api.http().get('/contracts/ctr_missing/current-usage').set(system());
    expect(missing.status).toBe(404);
    const contract = await meteredContract('2026-11-01');
    // The horizon is 366 days ahead of today.
    const far = await api.http().get(`/contracts/${contract.contractId}/current-usage`).query({ date: utcDaysFromToday(400) }).set(system());
    expect(far.status).toBe(400);
  });
});
