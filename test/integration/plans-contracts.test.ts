import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createBillingFixture, type BillingFixture } from './support/billing-fixtures';
import { recordHistory } from './support/record-history';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;
const FORBIDDEN = { status: 'error', message: 'Forbidden', errors: [] };

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'contracts');
  fixture = await createBillingFixture(api, tenant);
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

async function newContract() {
  const res = await api.http().post('/contracts').set(system()).send({ customerId: fixture.customerId, currency: 'USD', startDate: '2026-01-01', plans: [{ planId: (await planOf(fixture)).id }] });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; status: string; plans: Array<{ id: string; planId: string }> };
}

async function planOf(f: BillingFixture) {
  const contract = await api.http().get(`/contracts/${f.contractId}`).set(system());
  return { id: contract.body.data.plans[0].planId as string };
}

describe('billing plans', () => {
  const planBody = {
    name: 'Usage plan',
    currency: 'EUR',
    billingPeriod: 'monthly',
    items: [
      { name: 'Seats', pricingModel: 'per_unit', unitPrice: '12.5' },
      { name: 'API', pricingModel: 'graduated', tiers: [{ upTo: 1000, unitPrice: '0.01' }, { upTo: null, unitPrice: '0.005', flatFee: 3 }] },
    ],
  };

  it('when an admin creates a plan, then it comes back with its items, amounts as strings', async () => {
    const res = await api.http().post('/billing/plans').set(admin()).send(planBody);
    expect(res.status).toBe(201);
    expect(res.body.data.items.map((item: { unitPrice: string | null }) => item.unitPrice)).toEqual(['12.5', null]);
    expect(res.body.data.items[1].tiers).toEqual([{ upTo: '1000', unitPrice: '0.01' }, { upTo: null, unitPrice: '0.005', flatFee: '3' }]);
  });

  it('when a SystemUser manages plans, then every write and the list answer 403; reading by id and deleting an item work', async () => {
    const created = await api.http().post('/billing/plans').set(admin()).send(planBody).expect(201);
    const planId = created.body.data.id;
    for (const res of [
      await api.http().post('/billing/plans').set(system()).send(planBody),
      await api.http().get('/billing/plans').set(system()),
      await api.http().put(`/billing/plans/${planId}`).set(system()).send({ name: 'x' }),
      await api.http().delete(`/billing/plans/${planId}`).set(system()),
      await api.http().post(`/billing/plans/${planId}/items`).set(system()).send(planBody.items[0]),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN);
    }
    await api.http().get(`/billing/plans/${planId}`).set(system()).expect(200);
    await api.http().delete(`/billing/plans/${planId}/items/${created.body.data.items[0].id}`).set(system()).expect(200);
    const after = await api.http().get(`/billing/plans/${planId}`).set(system());
    expect(after.body.data.items).toHaveLength(1);
  });

  it('when an item cannot be priced, then 400 naming the item', async () => {
    const res = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ ...planBody, items: [{ name: 'Broken', pricingModel: 'volume', tiers: [{ upTo: 10, unitPrice: 1 }] }] });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ code: 1001, path: 'body.items.0' });
  });

  it('when a contract uses a plan, then deleting the plan answers 409', async () => {
    const plan = await planOf(fixture);
    await api.http().delete(`/billing/plans/${plan.id}`).set(admin()).expect(409);
  });
});

describe('contract lifecycle on Temporal', () => {
  it('when a contract is created, then it is a draft whose workflow carries its search attributes', async () => {
    const contract = await newContract();
    expect(contract.status).toBe('draft');
    const description = await api.temporal.client.workflow.getHandle(`contract:${contract.id}`).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.searchAttributes).toMatchObject({ OrganisationId: [tenant.organisationId], CustomerId: [fixture.customerId], ContractId: [contract.id] });
  });

  it('when it is activated, suspended, resumed and ended, then each state holds and the workflow completes', async () => {
    const contract = await newContract();
    for (const [action, status] of [['activate', 'active'], ['suspend', 'suspended'], ['resume', 'active'], ['end', 'ended']]) {
      const res = await api.http().post(`/contracts/${contract.id}/${action}`).set(system());
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe(status);
    }
    const result = await api.temporal.client.workflow.getHandle(`contract:${contract.id}`).result();
    expect(result).toBe('ended');
    await recordHistory(api, `contract:${contract.id}`, 'contract-activate-suspend-resume-end');
  });

  it('when a transition is illegal, then 409 and the contract is unchanged', async () => {
    const contract = await newContract();
    const res = await api.http().post(`/contracts/${contract.id}/resume`).set(system());
    expect(res.status).toBe(409);
    expect(res.body.errors[0]).toMatchObject({ code: 1003 });
    expect((await api.db('contracts').where({ id: contract.id }).first()).status).toBe('draft');
    const viaFsm = await api.http().post(`/fsm/contract/${contract.id}/transition`).set(system()).send({ action: 'suspend' });
    expect(viaFsm.status).toBe(409);
    const actions = await api.http().get(`/fsm/contract/${contract.id}/actions`).set(system());
    expect(actions.body.data.allowedActions).toEqual(['activate', 'terminate']);
  });

  it('when a terminated contract is asked to activate, then 409', async () => {
    const contract = await newContract();
    await api.http().post(`/contracts/${contract.id}/terminate`).set(system()).expect(200);
    await api.http().post(`/contracts/${contract.id}/activate`).set(system()).expect(409);
  });
});

describe('contract plans', () => {
  it("when a plan's days lie outside the contract's, then 400 names each date", async () => {
    const planId = (await planOf(fixture)).id;
    const res = await api
      .http()
      .post('/contracts')
      .set(system())
      .send({ customerId: fixture.customerId, currency: 'USD', startDate: '2026-06-01', endDate: '2026-12-31', plans: [{ planId, startDate: '2026-01-01' }, { planId, startDate: '2026-07-01', endDate: '2027-03-31' }] });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ path: 'body.plans.0.startDate', message: "must not be before the contract's startDate 2026-06-01" }),
      expect.objectContaining({ path: 'body.plans.1.endDate', message: "must not be after the contract's endDate 2026-12-31" }),
    ]);
    await api.http().post('/contracts').set(system()).send({ customerId: fixture.customerId, currency: 'USD', startDate: '2026-06-01', plans: [{ planId, startDate: '2026-07-01', endDate: '2026-09-30' }] }).expect(201);
  });
});

describe('customers with contracts', () => {
  it('when a customer has a contract that is not ended, then deleting the customer answers 409 naming it; once it is terminated, the customer is deleted', async () => {
    const own = await createBillingFixture(api, tenant);
    const refused = await api.http().delete(`/customers/${own.customerId}`).set(admin());
    // A draft counts: activated later, it would bill a customer that is gone.
    expect([refused.status, refused.body.errors[0].message]).toEqual([409, `the customer has contracts that are not ended: ${own.contractId} (draft); end or terminate them first`]);
    await api.http().get(`/customers/${own.customerId}`).set(system()).expect(200);
    await api.http().post(`/contracts/${own.contractId}/activate`).set(system()).expect(200);
    expect((await api.http().delete(`/customers/${own.customerId}`).set(admin())).status).toBe(409);
    await api.http().post(`/contracts/${own.contractId}/terminate`).set(system()).expect(200);
    await api.http().delete(`/customers/${own.customerId}`).set(admin()).expect(200);
  });
});

describe('milestones', () => {
  it('when a milestone of an active contract is achieved, then it is recorded and its draft invoice exists; twice is a no-op', async () => {
    const contract = await newContract();
    const base = `/contracts/${contract.id}/plans/${contract.plans[0]!.id}/milestones`;
    const created = await api.http().post(base).set(system()).send({ planItemId: fixture.planItemId, name: 'Go-live', percentage: 25 });
    expect(created.status).toBe(201);
    const milestoneId = created.body.data.id;
    await api.http().post(`${base}/${milestoneId}/achieve`).set(system()).expect(409);

    await api.http().post(`/contracts/${contract.id}/activate`).set(system()).expect(200);
    const achieved = await api.http().post(`${base}/${milestoneId}/achieve`).set(system());
    expect(achieved.status).toBe(200);
    expect(achieved.body.data.achievedAt).toEqual(expect.any(String));
    const invoiceId = achieved.body.data.invoiceId;
    const invoice = await api.http().get(`/invoices/${invoiceId}`).set(system());
    // 25% of the plan's flat 100.00 platform fee.
    expect(invoice.body.data).toMatchObject({ status: 'draft', ContractPlanId: contract.plans[0]!.id, items: [expect.objectContaining({ title: 'Go-live', price: '25' })] });
    const again = await api.http().post(`${base}/${milestoneId}/achieve`).set(system());
    expect(again.body.data.invoiceId).toBe(invoiceId);
    expect(await api.db('invoices').where({ contract_id: contract.id }).count({ n: '*' })).toEqual([{ n: '1' }]);
    await api.http().post(`/invoices/${invoiceId}/raise`).set(system()).expect(200);
    await api.http().delete(`${base}/${milestoneId}`).set(system()).expect(409);
    await api.http().post(`/contracts/${contract.id}/end`).set(system()).expect(200);
    await recordHistory(api, `contract:${contract.id}`, 'contract-milestone-achieved-twice');
  });

  it('when a milestone is deleted while its achievement commits, then the delete waits for it and answers 409: an achieved milestone is never deleted', async () => {
    const contract = await newContract();
    const base = `/contracts/${contract.id}/plans/${contract.plans[0]!.id}/milestones`;
    const created = await api.http().post(base).set(system()).send({ planItemId: fixture.planItemId, name: 'Handover', percentage: 10 }).expect(201);
    // The achievement's transaction, as the workflow's step holds it: the row locked and marked achieved, not yet committed.
    const achieving = await api.db.transaction();
    await achieving('contract_milestones').where({ id: created.body.data.id }).update({ achieved_at: achieving.fn.now() });
    const deleting = api.http().delete(`${base}/${created.body.data.id}`).set(system()).then((res) => res);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await achieving.commit();
    expect((await deleting).status).toBe(409);
    expect(await api.db('contract_milestones').where({ id: created.body.data.id }).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('when a milestone gives both amount and percentage, then 400', async () => {
    const contract = await newContract();
    const res = await api
      .http()
      .post(`/contracts/${contract.id}/plans/${contract.plans[0]!.id}/milestones`)
      .set(system())
      .send({ planItemId: fixture.planItemId, name: 'x', amount: 10, percentage: 5 });
    expect(res.status).toBe(400);
    // An amount finer than the contract's currency would be rounded on its invoice.
    const finer = await api.http().post(`/contracts/${contract.id}/plans/${contract.plans[0]!.id}/milestones`).set(system()).send({ planItemId: fixture.planItemId, name: 'x', amount: '10.005' });
    expect([finer.status, finer.body.errors]).toEqual([400, [expect.objectContaining({ path: 'body.amount', message: 'must have at most 2 decimal places, as USD amounts do' })]]);
  });
});

describe('taxes', () => {
  it('when a contract has a tax, then its invoices are taxed at raise; only an Admin may change the tax', async () => {
    const contract = await newContract();
    const tax = await api.http().post(`/contracts/${contract.id}/taxes`).set(system()).send({ name: 'VAT', rate: '20' });
    expect(tax.status).toBe(201);
    const put = `/contracts/${contract.id}/taxes/${tax.body.data.id}`;
    expect((await api.http().put(put).set(system()).send({ name: 'VAT', rate: 19 })).body).toEqual(FORBIDDEN);
    await api.http().put(put).set(admin()).send({ name: 'VAT', rate: '19' }).expect(200);
    const invoice = await api
      .http()
      .post('/invoices')
      .set(system())
      .send({ contractPlanId: contract.plans[0]!.id, invoiceData: { date: '2026-11-01' }, invoiceItems: [{ title: 'Fee', quantity: 1, price: '100' }] });
    const raised = await api.http().post(`/invoices/${invoice.body.data.id}/raise`).set(system());
    expect(raised.body.data).toMatchObject({ subtotal: '100.00', taxTotal: '19.00', total: '119.00', data: { taxes: [{ name: 'VAT', rate: '19', amount: '19.00' }] } });
    const listed = await api.http().get(`/contracts/${contract.id}/taxes`).set(system());
    expect(listed.body.data).toEqual([expect.objectContaining({ name: 'VAT', rate: '19', appliesTo: 'all' })]);
  });
});

describe('isolation', () => {
  it("when another organisation asks for this organisation's contract, plan, milestones or taxes, then 404", async () => {
    const other = await createTenant(api, 'contracts-other');
    const contract = await newContract();
    const plan = await planOf(fixture);
    for (const path of [`/contracts/${contract.id}`, `/billing/plans/${plan.id}`, `/contracts/${contract.id}/plans/${contract.plans[0]!.id}/milestones`, `/contracts/${contract.id}/taxes`]) {
      expect((await api.http().get(path).set(bearer(other.systemToken))).status).toBe(404);
    }
    await api.http().post(`/contracts/${contract.id}/activate`).set(bearer(other.systemToken)).expect(404);
    const list = await api.http().get('/contracts').set(bearer(other.systemToken));
    expect(list.body.data.total).toBe(0);
  });
});

describe('concurrent transitions', () => {
  it('when a contract is activated five times at once, then exactly one activation succeeds', async () => {
    const contract = await newContract();
    const responses = await Promise.all(Array.from({ length: 5 }, () => api.http().post(`/contracts/${contract.id}/activate`).set(system())));
    expect(responses.map((res) => res.status).sort()).toEqual([200, 409, 409, 409, 409]);
  });
});
