import { newId } from '../../src/db/ids';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { waitFor } from '../support/wait';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';

jest.setTimeout(300_000);

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  // Pages of 25 contracts, two at a time: a run of 200 is 8 transactions, and the kill lands between them.
  stack = await startBreakableStack('run-fault', { INVOICE_RUN_PAGE_SIZE: '25', INVOICE_RUN_PAGES_IN_FLIGHT: '2' });
  api = stack.api;
  tenant = await createTenant(api, 'run-fault');
});
afterAll(() => stack?.close());

const CONTRACTS = 200;

/** Many active contracts on one monthly plan with a flat fee, written straight to the tables for speed. */
async function activeContracts(): Promise<string[]> {
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(bearer(tenant.adminToken))
    .send({ name: 'Monthly seat', currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Seat fee', pricingModel: 'flat', unitPrice: '310' }] })
    .expect(201);
  const organisationId = tenant.organisationId;
  const customers = Array.from({ length: CONTRACTS }, (_, i) => ({ id: newId('cus'), organisation_id: organisationId, name: `Customer ${i}`, currency: 'USD' }));
  const contracts = customers.map((customer) => ({
    id: newId('con'),
    organisation_id: organisationId,
    customer_id: customer.id,
    currency: 'USD',
    status: 'active',
    start_date: '2026-11-01',
  }));
  const plans = contracts.map((contract) => ({ id: newId('cpl'), organisation_id: organisationId, contract_id: contract.id, plan_id: plan.body.data.id, start_date: '2026-11-01' }));
  await api.db('customers').insert(customers);
  await api.db('contracts').insert(contracts);
  await api.db('contract_plans').insert(plans);
  return contracts.map((contract) => contract.id).sort();
}

it('when the worker is killed in the middle of a run of 200 contracts, then the run completes with exactly one invoice per contract plan', async () => {
  const contractIds = await activeContracts();
  // Hold one contract halfway through the list, so that the run is surely in flight when the worker dies.
  const blocker = await api.db.transaction();
  await blocker('contracts').where({ id: contractIds[120] }).forUpdate().first();

  const started = await api.http().post('/invoice-runs').set(bearer(tenant.systemToken)).send({ billingDate: '2026-11-01' });
  expect(started.status).toBe(201);
  const runId = started.body.data.id as string;
  await waitFor(async () => {
    const rows = await api.db('invoice_run_contracts').where({ invoice_run_id: runId }).count({ n: '*' });
    return Number(rows[0]!.n) >= 50 ? true : undefined;
  }, 120_000);
  await stack.killWorker();
  await blocker.commit();
  await stack.startWorker();

  const run = await waitFor(async () => {
    const read = await api.http().get(`/invoice-runs/${runId}`).set(bearer(tenant.systemToken));
    return read.body.data.status === 'running' ? undefined : read.body.data;
  }, 180_000);
  expect(run).toMatchObject({ status: 'completed', progress: { contracts: CONTRACTS, done: CONTRACTS, failed: 0 }, invoicesCreated: CONTRACTS });
  const perPlan = await api.db('invoices').where({ organisation_id: tenant.organisationId }).groupBy('contract_plan_id').select('contract_plan_id').count({ n: '*' });
  expect(perPlan).toHaveLength(CONTRACTS);
  expect(perPlan.every((row) => Number(row.n) === 1)).toBe(true);
  expect(await api.db('charges').where({ organisation_id: tenant.organisationId }).count({ n: '*' })).toEqual([{ n: String(CONTRACTS) }]);
});
