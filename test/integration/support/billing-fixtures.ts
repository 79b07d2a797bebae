import { randomUUID } from 'node:crypto';
import { bearer, type Tenant, type TestApi } from './harness';

export interface BillingFixture {
  customerId: string;
  contractId: string;
  contractPlanId: string;
  planItemId: string;
  contactEmails: string[];
}

/** Who the fixture's documents are from and to: the customer's own fields (a locale), and the addresses. */
export interface FixtureParties {
  customer?: Record<string, unknown>;
  sellerAddress?: Record<string, unknown>;
  customerAddress?: Record<string, unknown>;
}

/** A customer with a seller, a contact group, a plan and an active contract, all made through the API. */
export async function createBillingFixture(api: TestApi, tenant: Tenant, currency = 'USD', parties: FixtureParties = {}): Promise<BillingFixture> {
  const system = bearer(tenant.systemToken);
  const admin = bearer(tenant.adminToken);
  const customer = await api.http().post('/customers').set(system).send({ name: `Customer ${randomUUID().slice(0, 8)}`, currency, ...parties.customer }).expect(201);
  const customerId = customer.body.data.id as string;
  await api
    .http()
    .post('/entities')
    .set(system)
    .send({ type: 'seller', name: 'Seller Ltd', taxId: 'GB123', address: parties.sellerAddress ?? { line1: '1 Market St', city: 'London', country: 'GB' } })
    .expect(201);
  await api
    .http()
    .post('/entities')
    .set(system)
    .send({ type: 'customer', name: 'Customer GmbH', customerId, address: parties.customerAddress ?? { line1: '2 Hauptstr.', city: 'Berlin', country: 'DE' } })
    .expect(201);
  const contactEmails = [`billing-${randomUUID().slice(0, 8)}@example.com`, `cfo-${randomUUID().slice(0, 8)}@example.com`];
  await api
    .http()
    .post('/contact-groups')
    .set(system)
    .send({ customerId, name: 'Billing', contacts: contactEmails.map((email, i) => ({ name: `Contact ${i}`, email })) })
    .expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin)
    .send({ name: `Plan ${randomUUID().slice(0, 8)}`, currency, billingPeriod: 'monthly', items: [{ name: 'Platform fee', pricingModel: 'flat', unitPrice: '100' }] })
    .expect(201);
  const contract = await api
    .http()
    .post('/contracts')
    .set(system)
    .send({ customerId, currency, startDate: '2026-01-01', plans: [{ planId: plan.body.data.id }] })
    .expect(201);
  return {
    customerId,
    contractId: contract.body.data.id,
    contractPlanId: contract.body.data.plans[0].id,
    planItemId: plan.body.data.items[0].id,
    contactEmails,
  };
}

/** What `createMeteredContract` made. */
export interface MeteredContract {
  contractId: string;
  contractPlanId: string;
  planId: string;
  /** The plan's items, in the order given. */
  itemIds: string[];
  entityId: string;
  metric: string;
  /** The contract as POST /contracts answered it. */
  contract: Record<string, unknown>;
}

/**
 * A customer (USD) with one entity, a `sum` meter of a metric of its own, a monthly plan of `items` (given
 * the meter's id, for the metered ones), and a contract from `startDate` (with `contract`'s fields too),
 * activated: all through the API.
 */
export async function createMeteredContract(
  api: TestApi,
  tenant: Tenant,
  options: { label: string; startDate: string; items: (meterId: string) => Array<Record<string, unknown>>; contract?: Record<string, unknown> },
): Promise<MeteredContract> {
  const system = bearer(tenant.systemToken);
  const admin = bearer(tenant.adminToken);
  const tag = randomUUID().slice(0, 8);
  const customer = await api.http().post('/customers').set(system).send({ name: `${options.label} ${tag}`, currency: 'USD' }).expect(201);
  const entity = await api.http().post('/entities').set(system).send({ type: 'customer', name: `Entity ${tag}`, customerId: customer.body.data.id }).expect(201);
  const metric = `calls_${tag}`;
  const meter = await api.http().post('/meters').set(admin).send({ name: `Calls ${tag}`, metric, aggregation: 'sum' }).expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin)
    .send({ name: `Monthly ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: options.items(meter.body.data.id) })
    .expect(201);
  const contract = await api
    .http()
    .post('/contracts')
    .set(system)
    .send({ customerId: customer.body.data.id, currency: 'USD', startDate: options.startDate, ...options.contract, plans: [{ planId: plan.body.data.id }] })
    .expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system).send({}).expect(200);
  return {
    contractId: contract.body.data.id,
    contractPlanId: contract.body.data.plans[0].id,
    planId: plan.body.data.id,
    itemIds: plan.body.data.items.map((item: { id: string }) => item.id),
    entityId: entity.body.data.id,
    metric,
    contract: contract.body.data,
  };
}

export function invoiceBody(contractPlanId: string, items = [{ title: 'Platform fee', quantity: 1, price: 100 }]) {
  return {
    contractPlanId,
    invoiceData: { date: '2026-11-01', fromDate: '2026-11-01', toDate: '2026-11-30' },
    invoiceItems: items.map((item) => ({ ...item, description: `${item.title} for November`, fromDate: '2026-11-01', toDate: '2026-11-30' })),
  };
}

/** Waits, through the API, for an invoice run to end (completed or failed). */
export async function waitForRun(api: TestApi, tenant: Tenant, runId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const read = await api.http().get(`/invoice-runs/${runId}`).set(bearer(tenant.systemToken)).expect(200);
    if (read.body.data.status !== 'running') return;
    if (Date.now() > deadline) throw new Error('the run did not finish');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits for an invoice run to end, through the API; the drafts it made. */
export async function invoicesOfFinishedRun<T = Record<string, unknown>>(api: TestApi, tenant: Tenant, runId: string): Promise<T[]> {
  const system = () => bearer(tenant.systemToken);
  await waitForRun(api, tenant, runId);
  const made = await api.http().get('/invoices').set(system()).query({ invoiceRunId: runId }).expect(200);
  return made.body.data.items as T[];
}

/** Runs an invoice run for one contract on `billingDate` to its end, through the API; the drafts it made. */
export async function invoicesOfRun<T = Record<string, unknown>>(api: TestApi, tenant: Tenant, contractId: string, billingDate: string): Promise<T[]> {
  const started = await api.http().post('/invoice-runs').set(bearer(tenant.systemToken)).send({ billingDate, contractIds: [contractId] }).expect(201);
  return invoicesOfFinishedRun<T>(api, tenant, started.body.data.id);
}
