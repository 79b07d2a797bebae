import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { invoicesOfRun } from './support/billing-fixtures';
import { createCustomerEntity } from './support/fixtures';
import { recordHistory } from './support/record-history';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'plan-changes');
  // The contracts bill in euros: no FX rate needed.
  await api.http().put('/organisation/settings').set(bearer(tenant.adminToken)).send({ baseCurrency: 'EUR' }).expect(200);
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);

type Line = { id: string; title: string; description: string; planItemId: string; amount: string; fromDate: string; toDate: string; planChangeId: string | null };
type Invoice = { id: string; ContractPlanId: string; subtotal: string; total: string; items: Line[] };

interface WorkedExample {
  contractId: string;
  basicContractPlanId: string;
  basicPlanId: string;
  proPlanId: string;
  entityId: string;
  metric: string;
}

/**
 * The worked example of docs/adjustments.md: Basic (fee 30.00 a month in advance, API calls 0.10 in arrears)
 * from 1 January 2026, calendar months; Pro has a fee of 90.00 and API calls at 0.05. 100 calls on 5 January,
 * 200 on 20 January.
 */
async function workedExample(options: { proFee?: string; startOn?: 'Basic' | 'Pro' } = {}): Promise<WorkedExample> {
  const tag = randomUUID().slice(0, 8);
  const { customerId, entityId } = await createCustomerEntity(api, tenant);
  const metric = `api_calls_${tag}`;
  const meter = await api.http().post('/meters').set(admin()).send({ name: `API calls ${tag}`, metric, aggregation: 'sum' }).expect(201);
  const planOf = async (name: string, fee: string, perCall: string) =>
    api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({
        name: `${name} ${tag}`,
        currency: 'EUR',
        billingPeriod: 'monthly',
        items: [
          { name: `${name} fee`, pricingModel: 'flat', unitPrice: fee },
          { name: 'API calls', pricingModel: 'per_unit', unitPrice: perCall, meterId: meter.body.data.id },
        ],
      })
      .expect(201);
  const basic = await planOf('Basic', '30', '0.10');
  const pro = await planOf('Pro', options.proFee ?? '90', '0.05');
  const first = options.startOn === 'Pro' ? pro : basic;
  const contract = await api
    .http()
    .post('/contracts')
    .set(system())
    .send({ customerId, currency: 'EUR', startDate: '2026-01-01', plans: [{ planId: first.body.data.id }] })
    .expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
  const events = [
    { CustomerEntityId: entityId, metric, value: 100, timestamp: '2026-01-05T12:00:00Z' },
    { CustomerEntityId: entityId, metric, value: 200, timestamp: '2026-01-20T12:00:00Z' },
  ];
  await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  // The first contract plan: Basic's, unless the contract starts on Pro.
  return { contractId: contract.body.data.id, basicContractPlanId: contract.body.data.plans[0].id, basicPlanId: basic.body.data.id, proPlanId: pro.body.data.id, entityId, metric };
}

const run = (contractId: string, billingDate: string) => invoicesOfRun<Invoice>(api, tenant, contractId, billingDate);
/** Moves the worked example from Basic to Pro on 11 January. */
const upgradeOn11January = (example: WorkedExample) =>
  api
    .http()
    .post(`/contracts/${example.contractId}/plan-changes`)
    .set(system())
    .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId, effectiveDate: '2026-01-11' })
    .expect(201);
const raise = async (invoice: Invoice): Promise<Invoice> => (await api.http().post(`/invoices/${invoice.id}/raise`).set(system()).send({}).expect(200)).body.data;
const lines = (invoice: Invoice) => invoice.items.map((line) => [line.title, line.fromDate, line.toDate, line.amount ?? null]);

describe('plan changes', () => {
  it('when the contract upgrades from Basic to Pro on 11 January, then February’s run bills exactly the worked amounts of docs/adjustments.md', async () => {
    const example = await workedExample();
    const [january] = await run(example.contractId, '2026-01-01');
    const raisedJanuary = await raise(january!);
    expect(lines(raisedJanuary)).toEqual([['Basic fee', '2026-01-01', '2026-01-31', '30.00']]);

    const changed = await upgradeOn11January(example);
    expect(changed.body.data).toMatchObject({
      effectiveDate: '2026-01-11',
      prorate: true,
      status: 'pending',
      credits: [{ title: 'Basic fee', invoiceId: january!.id, from: '2026-01-11', to: '2026-01-31', days: 21, periodDays: 31, amount: '20.32' }],
    });
    const contract = await api.http().get(`/contracts/${example.contractId}`).set(system()).expect(200);
    expect(contract.body.data.plans.map((plan: { startDate: string; endDate: string | null }) => [plan.startDate, plan.endDate])).toEqual([
      ['2026-01-01', '2026-01-10'],
      ['2026-01-11', null],
    ]);

    const february = await run(example.contractId, '2026-02-01');
    const onBasic = february.find((invoice) => invoice.ContractPlanId === example.basicContractPlanId)!;
    const onPro = february.find((invoice) => invoice.ContractPlanId === changed.body.data.toContractPlanId)!;
    // Usage up to the change on Basic's price: 100 calls × 0.10.
    expect(lines(await raise(onBasic))).toEqual([['API calls', '2026-01-01', '2026-01-10', '10.00']]);
    // The draft's credit line stays: deleted, the customer would lose the credit.
    const creditLine = onPro.items.find((line) => line.planChangeId === changed.body.data.id)!;
    const removal = await api.http().delete(`/invoices/${onPro.id}/items/${creditLine.id}`).set(system());
    expect([removal.status, JSON.stringify(removal.body)]).toEqual([409, expect.stringContaining('credits plan change')]);
    // From the change on, Pro: its fee for 21 of January's 31 days (90.00 − 29.03), February whole, 200 calls
    // × 0.05, and Basic's fee for the same 21 days credited (30.00 − 9.68).
    const pro = await raise(onPro);
    expect(lines(pro)).toEqual([
      ['Pro fee', '2026-01-11', '2026-01-31', '60.97'],
      ['Pro fee', '2026-02-01', '2026-02-28', '90.00'],
      ['API calls', '2026-01-11', '2026-01-31', '10.00'],
      ['Unused Basic fee', '2026-01-11', '2026-01-31', '-20.32'],
    ]);
    expect(pro.subtotal).toBe('140.65');
    // Day by day: Basic's 10 days cost 30.00 − 20.32 = 9.68 = 30 × 10 / 31 rounded; Pro's 21, 90 × 21 / 31 rounded.
    expect(pro.items.find((line) => line.planChangeId !== null)!.planChangeId).toBe(changed.body.data.id);

    const settled = await api.http().get(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}`).set(system()).expect(200);
    expect(settled.body.data).toMatchObject({ status: 'settled', settledInvoiceId: onPro.id, creditedToBalance: null });
    // Once invoiced, the change stays: 409, and the contract is unchanged.
    const late = await api.http().post(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}/undo`).set(system()).send({});
    expect(late.status).toBe(409);
    // The January invoice cannot be cancelled now: its fee would be given back twice.
    const cancel = await api.http().put(`/invoices/${january!.id}`).set(admin()).send({ status: 'cancelled' });
    expect([cancel.status, JSON.stringify(cancel.body)]).toEqual([409, expect.stringContaining('a plan change credits')]);
    // January's Basic fee has 9.68 left to credit: a credit note for more is refused, for exactly that is not.
    const creditNote = (amount: string) =>
      api.http().post(`/invoices/${january!.id}/credit-notes`).set(system()).send({ reason: 'Goodwill', items: [{ invoiceItemId: raisedJanuary.items[0]!.id, amount }] });
    expect((await creditNote('9.69')).status).toBe(409);
    expect((await creditNote('9.68')).status).toBe(201);
    const events = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'contract.plan_changed' }).whereRaw("payload->'data'->'planChange'->>'id' = ?", [changed.body.data.id]);
    expect(events).toHaveLength(1);
  });

  it('when a change is undone before the next run, then that run bills as if it had never been made', async () => {
    const example = await workedExample();
    await raise((await run(example.contractId, '2026-01-01'))[0]!);
    const changed = await upgradeOn11January(example);
    const undone = await api.http().post(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}/undo`).set(system()).send({}).expect(200);
    expect(undone.body.data).toMatchObject({ status: 'undone', toContractPlanId: null });
    // Twice is the same answer.
    await api.http().post(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}/undo`).set(system()).send({}).expect(200);
    await recordHistory(api, `contract:${example.contractId}`, 'contract-plan-change-and-undo');

    const contract = await api.http().get(`/contracts/${example.contractId}`).set(system()).expect(200);
    expect(contract.body.data.plans.map((plan: { id: string; endDate: string | null }) => [plan.id, plan.endDate])).toEqual([[example.basicContractPlanId, null]]);
    const february = await run(example.contractId, '2026-02-01');
    expect(february).toHaveLength(1);
    expect(lines(await raise(february[0]!))).toEqual([
      ['Basic fee', '2026-02-01', '2026-02-28', '30.00'],
      ['API calls', '2026-01-01', '2026-01-31', '30.00'],
    ]);
  });

  it('when a change is asked that cannot hold, then 400 or 409 names why and nothing changes', async () => {
    const example = await workedExample();
    await run(example.contractId, '2026-01-01');
    const post = (body: object) => api.http().post(`/contracts/${example.contractId}/plan-changes`).set(system()).send(body);
    const base = { fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId };

    const early = await post({ ...base, effectiveDate: '2026-01-01' });
    expect([early.status, JSON.stringify(early.body)]).toEqual([400, expect.stringContaining('after the contract plan')]);
    const midPeriod = await post({ ...base, effectiveDate: '2026-01-11', prorate: false });
    expect([midPeriod.status, JSON.stringify(midPeriod.body)]).toEqual([400, expect.stringContaining('without proration')]);
    expect((await post({ ...base, toPlanId: 'bpl_missing', effectiveDate: '2026-01-11' })).status).toBe(404);
    expect((await post({ ...base, fromContractPlanId: 'cpl_missing', effectiveDate: '2026-01-11' })).status).toBe(404);

    // January's fee is on a draft, whose lines may still change: nothing stable to credit yet.
    const onDraft = await post({ ...base, effectiveDate: '2026-01-11' });
    expect([onDraft.status, JSON.stringify(onDraft.body)]).toEqual([409, expect.stringContaining('still a draft')]);

    // Usage of January invoiced on Basic: the change can no longer reach back into January.
    await run(example.contractId, '2026-02-01');
    const reaching = await post({ ...base, effectiveDate: '2026-01-20' });
    expect([reaching.status, JSON.stringify(reaching.body)]).toEqual([409, expect.stringContaining('from 2026-02-01')]);

    const listed = await api.http().get(`/contracts/${example.contractId}/plan-changes`).set(system()).expect(200);
    expect(listed.body.data.items).toEqual([]);
    const contract = await api.http().get(`/contracts/${example.contractId}`).set(system()).expect(200);
    expect(contract.body.data.plans).toHaveLength(1);
  });

  it('when two changes are made from the same plan, then the second credits only the days the plan still served, and they are undone latest first', async () => {
    const example = await workedExample();
    await raise((await run(example.contractId, '2026-01-01'))[0]!);
    const first = await upgradeOn11January(example);
    expect(first.body.data.credits.map((credit: { from: string; to: string; amount: string }) => [credit.from, credit.to, credit.amount])).toEqual([['2026-01-11', '2026-01-31', '20.32']]);
    // Basic now ends on 10 January: a change from it on 6 January credits 6–10 January alone.
    const second = await api
      .http()
      .post(`/contracts/${example.contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId, effectiveDate: '2026-01-06' })
      .expect(201);
    expect(second.body.data.credits.map((credit: { from: string; to: string; amount: string }) => [credit.from, credit.to, credit.amount])).toEqual([['2026-01-06', '2026-01-10', '4.84']]);
    // The change after a plan's last day is refused: it would credit nothing and start a plan that never bills.
    const afterEnd = await api
      .http()
      .post(`/contracts/${example.contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId, effectiveDate: '2026-01-11' });
    expect(afterEnd.status).toBe(400);

    const undo = (id: string) => api.http().post(`/contracts/${example.contractId}/plan-changes/${id}/undo`).set(system()).send({});
    const early = await undo(first.body.data.id);
    expect([early.status, JSON.stringify(early.body)]).toEqual([409, expect.stringContaining(`${second.body.data.id} was made after this one`)]);
    expect((await undo(second.body.data.id)).status).toBe(200);
    expect((await undo(first.body.data.id)).status).toBe(200);
    const contract = await api.http().get(`/contracts/${example.contractId}`).set(system()).expect(200);
    expect(contract.body.data.plans.map((plan: { id: string; endDate: string | null }) => [plan.id, plan.endDate])).toEqual([[example.basicContractPlanId, null]]);
  });

  it('when the contract is suspended after January was billed and changes plan before it resumes, then the change credits every day it gives up, and no day after it is paid twice', async () => {
    const example = await workedExample();
    const [january] = await run(example.contractId, '2026-01-01');
    expect(lines(await raise(january!))).toEqual([['Basic fee', '2026-01-01', '2026-01-31', '30.00']]);
    // Suspended from 10 January, still open. The API suspends from today: the example's days go on the row.
    const suspension = () => api.db('contract_suspensions').where({ contract_id: example.contractId });
    await api.http().post(`/contracts/${example.contractId}/suspend`).set(system()).send({}).expect(200);
    expect(await suspension().update({ from_date: '2026-01-10' })).toBe(1);

    const changed = await api
      .http()
      .post(`/contracts/${example.contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId, effectiveDate: '2026-01-20' })
      .expect(201);
    // January's fee was paid on 1 January, before the suspension: the 12 days from the change on come back
    // whole, though the suspension covers them. 30.00 − round(30 × 19 / 31) = 30.00 − 18.39.
    expect(changed.body.data.credits).toEqual([expect.objectContaining({ invoiceId: january!.id, from: '2026-01-20', to: '2026-01-31', days: 12, periodDays: 31, amount: '11.61' })]);

    // Resumed on 25 January.
    await api.http().post(`/contracts/${example.contractId}/resume`).set(system()).send({}).expect(200);
    expect(await suspension().update({ from_date: '2026-01-10', to_date: '2026-01-24' })).toBe(1);

    const february = await run(example.contractId, '2026-02-01');
    const onBasic = february.find((invoice) => invoice.ContractPlanId === example.basicContractPlanId)!;
    const onPro = february.find((invoice) => invoice.ContractPlanId === changed.body.data.toContractPlanId)!;
    expect(lines(await raise(onBasic))).toEqual([['API calls', '2026-01-01', '2026-01-19', '10.00']]);
    // Pro bills January from the resume: 7 of 31 days, 90.00 − round(90 × 24 / 31) = 90.00 − 69.68. The
    // usage is not suspended: 200 calls on 20 January × 0.05.
    const pro = await raise(onPro);
    expect(lines(pro)).toEqual([
      ['Pro fee', '2026-01-25', '2026-01-31', '20.32'],
      ['Pro fee', '2026-02-01', '2026-02-28', '90.00'],
      ['API calls', '2026-01-20', '2026-01-31', '10.00'],
      ['Unused Basic fee', '2026-01-20', '2026-01-31', '-11.61'],
    ]);
    expect(pro.subtotal).toBe('108.71');

    // Day by day from the change on: Basic keeps 30.00 − 11.61 = 18.39, what 1–19 January alone cost
    // (30 × 19 / 31 rounded), so it is paid nothing for 20–31 January; Pro charged 25–31 January once, and
    // 20–24 January, suspended, nobody. Without the credit, 25–31 January would be paid by both plans.
    const fees = await api
      .db('charges')
      .where({ contract_id: example.contractId, kind: 'fee' })
      .orderBy(['from_date'])
      .select('contract_plan_id', api.db.raw("to_char(from_date, 'YYYY-MM-DD') as from"), api.db.raw("to_char(to_date, 'YYYY-MM-DD') as to"), 'amount');
    expect(fees.map((fee: { contract_plan_id: string; from: string; to: string; amount: string }) => [fee.contract_plan_id, fee.from, fee.to, fee.amount])).toEqual([
      [example.basicContractPlanId, '2026-01-01', '2026-01-31', '30.00'],
      [changed.body.data.toContractPlanId, '2026-01-25', '2026-01-31', '20.32'],
      [changed.body.data.toContractPlanId, '2026-02-01', '2026-02-28', '90.00'],
    ]);
    const settled = await api.http().get(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}`).set(system()).expect(200);
    expect(settled.body.data).toMatchObject({ status: 'settled', settledInvoiceId: onPro.id, creditedToBalance: null });
  });

  it('when a downgrade credits more than the next invoice holds, then the invoice goes to zero, taxes included, and the rest, with its tax, goes to the credit balance', async () => {
    const example = await workedExample({ proFee: '900', startOn: 'Pro' });
    await api.http().post(`/contracts/${example.contractId}/taxes`).set(admin()).send({ name: 'VAT', rate: '20', appliesTo: 'all' }).expect(201);
    const [january] = await run(example.contractId, '2026-01-01');
    expect((await raise(january!)).total).toBe('1080.00');
    const changed = await api
      .http()
      .post(`/contracts/${example.contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.basicPlanId, effectiveDate: '2026-01-11' })
      .expect(201);
    // Pro's 900.00 for 21 of 31 days: 900.00 − round(900 × 10 / 31) = 900.00 − 290.32.
    expect(changed.body.data.credits.map((credit: { amount: string }) => credit.amount)).toEqual(['609.68']);

    const february = await run(example.contractId, '2026-02-01');
    const onBasic = await raise(february.find((invoice) => invoice.ContractPlanId === changed.body.data.toContractPlanId)!);
    // Basic 20.32 (11–31 Jan) + 30.00 (Feb) + 200 calls × 0.10 = 70.32; 70.31 of the credit fits, with VAT.
    expect(lines(onBasic).at(-1)).toEqual(['Unused Pro fee', '2026-01-11', '2026-01-31', '-70.31']);
    expect([onBasic.subtotal, onBasic.total]).toEqual(['0.01', '0.01']);
    // The other 539.37 goes to the balance with the 20 % VAT January charged on it: 647.24.
    const settled = await api.http().get(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}`).set(system()).expect(200);
    expect(settled.body.data).toMatchObject({ status: 'settled', settledInvoiceId: onBasic.id, creditedToBalance: '647.24' });
  });

  it('when a change credited a fee net of an earlier credit note, then that note cannot be voided nor its issue undone while the change stands', async () => {
    const example = await workedExample();
    const [january] = await run(example.contractId, '2026-01-01');
    const raised = await raise(january!);
    const note = await api.http().post(`/invoices/${raised.id}/credit-notes`).set(system()).send({ reason: 'Goodwill', items: [{ invoiceItemId: raised.items[0]!.id, amount: '20' }] }).expect(201);
    // 21 of 31 days would be 20.32; the note left 10.00 of the fee to credit.
    const changed = await upgradeOn11January(example);
    expect(changed.body.data.credits.map((credit: { amount: string }) => credit.amount)).toEqual(['10.00']);
    const refused = await api.http().post(`/credit-notes/${note.body.data.id}/void`).set(admin()).send({});
    expect([refused.status, refused.body.errors[0].message]).toEqual([409, expect.stringContaining(`plan change ${changed.body.data.id}`)]);
    // Nor its issue undone, which takes its credit back as a void does.
    const undone = await api.http().post(`/credit-notes/${note.body.data.id}/undo`).set(admin()).send({});
    expect([undone.status, undone.body.errors[0].message]).toEqual([409, expect.stringContaining(`plan change ${changed.body.data.id}`)]);
    expect((await api.http().get(`/credit-notes/${note.body.data.id}`).set(system()).expect(200)).body.data.status).toBe('issued');
    // Undone, the change credits nothing: the note may go.
    await api.http().post(`/contracts/${example.contractId}/plan-changes/${changed.body.data.id}/undo`).set(system()).send({}).expect(200);
    await api.http().post(`/credit-notes/${note.body.data.id}/void`).set(admin()).send({}).expect(200);
  });

  it('when the contract is terminated before a change takes effect, then the next run, with no invoice to make, gives the change whole to the credit balance with its tax, once', async () => {
    const tag = randomUUID().slice(0, 8);
    const { customerId } = await createCustomerEntity(api, tenant);
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const plan = (name: string) =>
      api.http().post('/billing/plans').set(admin()).send({ name: `${name} ${tag}`, currency: 'EUR', billingPeriod: 'yearly', items: [{ name: `${name} fee`, pricingModel: 'flat', unitPrice: '365' }] }).expect(201);
    const basic = await plan('Basic');
    const pro = await plan('Pro');
    // A year paid in advance, 30 days ago.
    const contract = await api
      .http()
      .post('/contracts')
      .set(system())
      .send({ customerId, currency: 'EUR', startDate: day(-30), billingAnchor: 'anniversary', plans: [{ planId: basic.body.data.id }] })
      .expect(201);
    const contractId = contract.body.data.id as string;
    await api.http().post(`/contracts/${contractId}/activate`).set(system()).send({}).expect(200);
    await api.http().post(`/contracts/${contractId}/taxes`).set(admin()).send({ name: 'VAT', rate: '20', appliesTo: 'all' }).expect(201);
    const [year] = await run(contractId, day(-30));
    expect((await raise(year!)).total).toBe('438.00');
    const changed = await api
      .http()
      .post(`/contracts/${contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: contract.body.data.plans[0].id, toPlanId: pro.body.data.id, effectiveDate: day(1) })
      .expect(201);
    const [credit] = changed.body.data.credits as Array<{ amount: string }>;
    expect(Number(credit!.amount)).toBeGreaterThan(300);
    // Ended today: Pro never starts, and the year's fee has nothing left to bill.
    await api.http().post(`/contracts/${contractId}/terminate`).set(system()).send({}).expect(200);
    const change = async () => (await api.http().get(`/contracts/${contractId}/plan-changes/${changed.body.data.id}`).set(system()).expect(200)).body.data;
    const balance = async () =>
      ((await api.http().get(`/customers/${customerId}/credits`).set(system()).expect(200)).body.data.balances as Array<{ currency: string; balance: string }>).find((row) => row.currency === 'EUR')?.balance ?? '0.00';

    // A run before the change's first day: nothing owed yet.
    expect(await run(contractId, day(0))).toEqual([]);
    expect([(await change()).status, await balance()]).toEqual(['pending', '0.00']);

    // From its first day on it is owed: the credit with the 20 % VAT the year charged on it.
    const owed = new Decimal(credit!.amount).times('1.2').toDecimalPlaces(2, Decimal.ROUND_HALF_UP).toFixed(2);
    expect(await run(contractId, day(1))).toEqual([]);
    expect(await change()).toMatchObject({ status: 'settled', settledInvoiceId: null, creditedToBalance: owed });
    expect(await balance()).toBe(owed);
    expect(await run(contractId, day(2))).toEqual([]);
    expect(await balance()).toBe(owed);
  });

  it('when a change takes effect at period end without proration, then it starts the next period and nothing is credited', async () => {
    const example = await workedExample();
    // Calendar months: the day after the month that holds today (UTC), read before and after the request
    // so that a run across midnight at a month's end finds either.
    const nextMonth = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
    const before = nextMonth(new Date());
    const changed = await api
      .http()
      .post(`/contracts/${example.contractId}/plan-changes`)
      .set(system())
      .send({ fromContractPlanId: example.basicContractPlanId, toPlanId: example.proPlanId, effectiveDate: 'period_end', prorate: false })
      .expect(201);
    expect([before, nextMonth(new Date())]).toContain(changed.body.data.effectiveDate);
    expect(changed.body.data).toMatchObject({ prorate: false, credits: [] });
  });
});
