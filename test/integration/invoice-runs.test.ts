import { AppError } from '../../src/domain/errors';
import { randomUUID } from 'node:crypto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { recordHistory } from './support/record-history';
import { eventually, startWebhookReceiver } from './support/webhook-receiver';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'invoice-runs');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);

interface WorkedExample {
  contractId: string;
  contractPlanId: string;
  entityId: string;
  meterId: string;
}

/** The worked example of docs/billing-runs.md: seat fee 310 in advance, API calls 0.5 in arrears, from 2026-10-16, calendar anchor. */
async function workedExample(owner: Tenant = tenant, currency = 'USD'): Promise<WorkedExample> {
  const system = () => bearer(owner.systemToken);
  const admin = () => bearer(owner.adminToken);
  const tag = randomUUID().slice(0, 8);
  const customer = await api.http().post('/customers').set(system()).send({ name: `Runs ${tag}`, currency }).expect(201);
  const entity = await api
    .http()
    .post('/entities')
    .set(system())
    .send({ type: 'customer', name: `Entity ${tag}`, customerId: customer.body.data.id, address: { line1: '1 Main St', city: 'Berlin', country: 'DE' } })
    .expect(201);
  const meter = await api.http().post('/meters').set(admin()).send({ name: `API calls ${tag}`, metric: `api_calls_${tag}`, aggregation: 'sum' }).expect(201);
  const plan = await api
    .http()
    .post('/billing/plans')
    .set(admin())
    .send({
      name: `Monthly ${tag}`,
      currency,
      billingPeriod: 'monthly',
      items: [
        { name: 'Seat fee', pricingModel: 'flat', unitPrice: '310' },
        { name: 'API calls', pricingModel: 'per_unit', unitPrice: '0.5', meterId: meter.body.data.id },
      ],
    })
    .expect(201);
  expect(plan.body.data.items.map((item: { billingTiming: string }) => item.billingTiming)).toEqual(['in_advance', 'in_arrears']);
  const contract = await api
    .http()
    .post('/contracts')
    .set(system())
    .send({ customerId: customer.body.data.id, currency, startDate: '2026-10-16', plans: [{ planId: plan.body.data.id }] })
    .expect(201);
  await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
  await api
    .http()
    .post('/contact-groups')
    .set(system())
    .send({ customerId: customer.body.data.id, name: 'Billing', contacts: [{ name: 'Accounts', email: `accounts-${tag}@example.com` }] })
    .expect(201);
  // 100 calls between 16 and 31 October, and some in November that the first runs must not bill.
  const events = [
    ...Array.from({ length: 10 }, (_, i) => ({ CustomerEntityId: entity.body.data.id, metric: `api_calls_${tag}`, value: 10, timestamp: `2026-10-${String(16 + i).padStart(2, '0')}T12:00:00Z` })),
    { CustomerEntityId: entity.body.data.id, metric: `api_calls_${tag}`, value: 7, timestamp: '2026-11-02T00:00:00Z' },
  ];
  await api.http().post('/events/batch').set(system()).send({ events }).expect(200);
  return { contractId: contract.body.data.id, contractPlanId: contract.body.data.plans[0].id, entityId: entity.body.data.id, meterId: meter.body.data.id };
}

async function runTo(body: object, owner: Tenant = tenant): Promise<{ id: string; [key: string]: unknown }> {
  const system = () => bearer(owner.systemToken);
  const started = await api.http().post('/invoice-runs').set(system()).send(body);
  expect(started.status).toBe(201);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = await api.http().get(`/invoice-runs/${started.body.data.id}`).set(system()).expect(200);
    if (run.body.data.status !== 'running') return run.body.data;
    if (Date.now() > deadline) throw new Error(`run ${started.body.data.id} still running`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Retries the run and waits for it to finish. */
async function retried(runId: string, owner: Tenant = tenant): Promise<Record<string, unknown>> {
  const system = () => bearer(owner.systemToken);
  const started = await api.http().post(`/invoice-runs/${runId}/retry`).set(system()).send({});
  expect(started.status).toBe(200);
  const deadline = Date.now() + 60_000;
  let run = started.body.data;
  while (run.status === 'running' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    run = (await api.http().get(`/invoice-runs/${runId}`).set(system())).body.data;
  }
  return run;
}

const linesOf = async (contractId: string) =>
  (
    await api
      .db('invoice_items as i')
      .join('invoices as v', 'v.id', 'i.invoice_id')
      .where('v.contract_id', contractId)
      .orderBy([{ column: 'v.date' }, { column: 'i.from_date' }, { column: 'i.title' }])
      .select('v.id as invoiceId', 'v.date', 'i.title', 'i.quantity', 'i.price', 'i.amount', 'i.from_date', 'i.to_date')
  ).map((row) => ({
    invoiceId: row.invoiceId as string,
    title: row.title as string,
    // A draft's line amount is fixed when it is raised: quantity × price until then.
    amount: (Number(row.quantity) * Number(row.price)).toFixed(2),
    from: (row.from_date as Date).toISOString().slice(0, 10),
    to: (row.to_date as Date).toISOString().slice(0, 10),
  }));

describe('invoice runs', () => {
  it('when the worked example is billed on 16 Oct, 1 Nov and 1 Nov again, then it gets exactly the invoices the semantics give, once', async () => {
    const example = await workedExample();

    const first = await runTo({ billingDate: '2026-10-16', contractIds: [example.contractId] });
    expect(first).toMatchObject({ status: 'completed', billingDate: '2026-10-16', progress: { contracts: 1, done: 1, failed: 0 }, invoicesCreated: 1, totals: [{ currency: 'USD', amount: '160.00' }] });
    const october = await linesOf(example.contractId);
    expect(october.map(({ invoiceId: _id, ...line }) => line)).toEqual([{ title: 'Seat fee', amount: '160.00', from: '2026-10-16', to: '2026-10-31' }]);

    const second = await runTo({ billingDate: '2026-11-01', contractIds: [example.contractId] });
    await recordHistory(api, `invoice-run:${second.id}`, 'invoice-run-worked-example');
    expect(second).toMatchObject({ status: 'completed', invoicesCreated: 1, totals: [{ currency: 'USD', amount: '360.00' }] });
    const november = (await linesOf(example.contractId)).filter((line) => line.invoiceId !== october[0]!.invoiceId);
    expect(november.map(({ invoiceId: _id, ...line }) => line)).toEqual([
      { title: 'API calls', amount: '50.00', from: '2026-10-16', to: '2026-10-31' },
      { title: 'Seat fee', amount: '310.00', from: '2026-11-01', to: '2026-11-30' },
    ]);
    expect(new Set(november.map((line) => line.invoiceId)).size).toBe(1);
    const invoice = await api.http().get(`/invoices/${november[0]!.invoiceId}`).set(system()).expect(200);
    expect(invoice.body.data).toMatchObject({ status: 'draft', invoiceRunId: second.id, ContractPlanId: example.contractPlanId });
    expect(second.invoices).toEqual([]);
    const listed = await api.http().get('/invoices').query({ invoiceRunId: second.id }).set(system()).expect(200);
    expect(listed.body.data.items.map((item: { id: string }) => item.id)).toEqual([november[0]!.invoiceId]);

    const again = await runTo({ billingDate: '2026-11-01', contractIds: [example.contractId] });
    expect(again).toMatchObject({ status: 'completed', invoicesCreated: 0, progress: { done: 1, failed: 0 } });
    expect(await linesOf(example.contractId)).toHaveLength(3);
  });

  it('when two runs for one date start together, then each contract plan and period is billed once', async () => {
    const example = await workedExample();
    const [a, b] = await Promise.all([runTo({ billingDate: '2026-11-01', contractIds: [example.contractId] }), runTo({ billingDate: '2026-11-01', contractIds: [example.contractId] })]);
    expect([a.status, b.status]).toEqual(['completed', 'completed']);
    const lines = await linesOf(example.contractId);
    // Between them: October's partial seat fee, November's seat fee and October's usage, each once.
    expect(lines.map(({ invoiceId: _id, ...line }) => line).sort((x, y) => `${x.from}${x.title}`.localeCompare(`${y.from}${y.title}`))).toEqual([
      { title: 'API calls', amount: '50.00', from: '2026-10-16', to: '2026-10-31' },
      { title: 'Seat fee', amount: '160.00', from: '2026-10-16', to: '2026-10-31' },
      { title: 'Seat fee', amount: '310.00', from: '2026-11-01', to: '2026-11-30' },
    ]);
    expect(await api.db('charges').where({ contract_plan_id: example.contractPlanId }).count({ n: '*' })).toEqual([{ n: '3' }]);
  });

  it('when a run is a dry run, then it shows the invoices it would make and stores none; the upcoming invoice says the same', async () => {
    const example = await workedExample();
    const dry = await runTo({ billingDate: '2026-11-01', contractIds: [example.contractId], dryRun: true });
    expect(dry).toMatchObject({ status: 'completed', dryRun: true, invoicesCreated: 0, totals: [{ currency: 'USD', amount: '520.00' }] });
    expect((dry.invoices as Array<{ invoiceId: string | null }>).map((invoice) => invoice.invoiceId)).toEqual([null]);
    expect(await linesOf(example.contractId)).toEqual([]);
    expect(await api.db('charges').where({ contract_plan_id: example.contractPlanId }).count({ n: '*' })).toEqual([{ n: '0' }]);

    const upcoming = await api.http().get(`/contracts/${example.contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(system()).expect(200);
    expect(upcoming.body.data.invoices).toEqual([expect.objectContaining({ contractPlanId: example.contractPlanId, currency: 'USD', total: '520.00', fromDate: '2026-10-16', toDate: '2026-11-30' })]);
    // The 100 calls as the API shows every quantity and price: exact, without trailing zeros.
    expect(upcoming.body.data.invoices[0].items).toContainEqual(expect.objectContaining({ title: 'API calls', quantity: '100', price: '0.5' }));
    // The dry run shows the same lines, written the same way.
    const shown = (lines: Array<Record<string, unknown>>) => lines.map(({ title, quantity, price, fromDate, toDate }) => ({ title, quantity, price, fromDate, toDate }));
    expect(shown((dry.invoices as Array<{ items: Array<Record<string, unknown>> }>)[0]!.items)).toEqual(shown(upcoming.body.data.invoices[0].items));
  });

  it('when one contract cannot be billed, then it fails alone with its reason, and retry bills it once the cause is mended', async () => {
    const good = await workedExample();
    const bad = await workedExample();
    // The bad contract's meter is out of reach (here: moved to another organisation), so its usage cannot be rated.
    const elsewhere = await createTenant(api, 'invoice-runs-elsewhere');
    await api.db('meters').where({ id: bad.meterId }).update({ organisation_id: elsewhere.organisationId });

    const run = await runTo({ billingDate: '2026-11-01', contractIds: [good.contractId, bad.contractId] });
    expect(run).toMatchObject({ status: 'completed', progress: { contracts: 2, done: 2, failed: 1 } });
    expect(run.failures).toEqual([{ contractId: bad.contractId, code: expect.any(String), message: expect.stringMatching(/meter/) }]);
    expect(await linesOf(good.contractId)).toHaveLength(3);
    expect(await linesOf(bad.contractId)).toHaveLength(0);

    await api.db('meters').where({ id: bad.meterId }).update({ organisation_id: tenant.organisationId });
    const after = await retried(run.id);
    expect(after).toMatchObject({ status: 'completed', progress: { done: 2, failed: 0 }, failures: [] });
    expect(await linesOf(bad.contractId)).toHaveLength(3);
    expect(await linesOf(good.contractId)).toHaveLength(3);
  });

  it('when a contract is billed in a currency with no FX rate to the base currency, then it fails alone, and retry bills it once the rate exists', async () => {
    const owner = await createTenant(api, 'invoice-runs-fx');
    await api.http().put('/organisation/settings').set(bearer(owner.systemToken)).send({ baseCurrency: 'EUR' }).expect(200);
    const receiver = await startWebhookReceiver();
    await api.http().post('/webhooks/endpoints').set(bearer(owner.adminToken)).send({ url: receiver.url('/runs'), eventTypes: ['invoice_run.completed'] }).expect(201);
    const good = await workedExample(owner, 'EUR');
    const bad = await workedExample(owner, 'USD');

    const run = await runTo({ billingDate: '2026-11-01' }, owner);
    expect(run).toMatchObject({ status: 'completed', progress: { contracts: 2, done: 2, failed: 1 }, invoicesCreated: 1 });
    // The message says how to fix it (integrator-small-things.test.ts checks its words).
    const missing = AppError.missingFxRate('USD', 'EUR', '2026-11-01').message;
    expect(run.failures).toEqual([{ contractId: bad.contractId, code: '1012', message: missing }]);
    // Its event carries the run as the API answers it, without the invoice list: which contract failed, and why.
    const { invoices: _invoices, ...shown } = run;
    const [event] = await eventually(() => {
      const got = receiver.received('/runs');
      return got.length > 0 ? got : undefined;
    });
    expect(JSON.parse(event!.body).data).toEqual(shown);
    expect(await linesOf(good.contractId)).toHaveLength(3);
    expect(await linesOf(bad.contractId)).toHaveLength(0);
    // The preview of the same invoice says the same, as a 422 of its own.
    const upcoming = await api.http().get(`/contracts/${bad.contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(bearer(owner.systemToken));
    expect([upcoming.status, upcoming.body]).toEqual([
      422,
      { status: 'error', message: missing, errors: [{ code: 1012, message: missing }] },
    ]);
    const documentedAs = (await api.http().get('/openapi.json').expect(200)).body.paths['/contracts/{id}/upcoming-invoice'].get.responses['422'];
    expect(documentedAs).toEqual({ description: expect.stringContaining('no FX rate effective on the date: code 1012'), content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } });

    await api.http().post('/fx-rates').set(bearer(owner.systemToken)).send({ fromCurrency: 'USD', toCurrency: 'EUR', rate: '0.9', effectiveDate: '2026-10-01' }).expect(201);
    // A retry runs under the workflow id its run recorded: a Schedule's run has the Schedule's (`irs_…-<time>`).
    const scheduled = `invoice-run:irs_test${randomUUID().slice(0, 8)}-2026-11-01T06:00:00Z`;
    await api.db('invoice_runs').where({ id: run.id }).update({ workflow_id: scheduled });
    expect(await retried(run.id, owner)).toMatchObject({ status: 'completed', progress: { done: 2, failed: 0 }, failures: [], invoicesCreated: 2 });
    expect((await api.temporal.client.workflow.getHandle(scheduled).describe()).status.name).toBe('COMPLETED');
    expect(await linesOf(bad.contractId)).toHaveLength(3);
    await eventually(() => (receiver.received('/runs').length > 1 ? true : undefined));
    await receiver.close();
    expect(await linesOf(good.contractId)).toHaveLength(3);
  });

  it('when a run is read whose workflow is gone (terminated, timed out, never started), then it is failed with invoice_run.failed announced, once', async () => {
    const id = `run_gone${randomUUID().replace(/-/g, '').slice(0, 18)}`;
    await api.db('invoice_runs').insert({ id, organisation_id: tenant.organisationId, billing_date: '2026-11-01', dry_run: false, workflow_id: `invoice-run:${id}`, created_by: 'test' });
    const read = await api.http().get(`/invoice-runs/${id}`).set(system()).expect(200);
    expect(read.body.data.status).toBe('failed');
    const events = () => api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'invoice_run.failed' }).whereRaw("payload->'data'->>'id' = ?", [id]);
    expect(await events()).toHaveLength(1);
    await api.http().get(`/invoice-runs/${id}`).set(system()).expect(200);
    expect(await events()).toHaveLength(1);
  });

  it('when Postgres refuses one contract of a page, then the page is billed again contract by contract and that contract fails alone', async () => {
    const contracts = await Promise.all([workedExample(), workedExample(), workedExample()]);
    const refused = contracts[1]!;
    // A constraint that refuses this contract's invoices alone, as Postgres refuses a value it cannot hold.
    await api.db.raw(`ALTER TABLE invoices ADD CONSTRAINT invoice_runs_test_refusal CHECK (contract_id IS DISTINCT FROM '${refused.contractId}') NOT VALID`);
    let run: Awaited<ReturnType<typeof runTo>>;
    try {
      run = await runTo({ billingDate: '2026-11-01', contractIds: contracts.map((contract) => contract.contractId) });
    } finally {
      await api.db.raw('ALTER TABLE invoices DROP CONSTRAINT invoice_runs_test_refusal');
    }
    expect(run).toMatchObject({ status: 'completed', progress: { contracts: 3, done: 3, failed: 1 }, invoicesCreated: 2 });
    expect(run.failures).toEqual([{ contractId: refused.contractId, code: expect.any(String), message: 'The change conflicts with data already stored' }]);
    for (const contract of contracts) expect(await linesOf(contract.contractId)).toHaveLength(contract === refused ? 0 : 3);

    expect(await retried(run.id)).toMatchObject({ status: 'completed', progress: { done: 3, failed: 0 } });
    expect(await linesOf(refused.contractId)).toHaveLength(3);
  });

  it('when a usage line would not fit its column, then the contract fails alone with the reason, before any SQL', async () => {
    const tag = randomUUID().slice(0, 8);
    const good = await workedExample();
    const admin = () => bearer(tenant.adminToken);
    const meter = await api.http().post('/meters').set(admin()).send({ name: `Bulk ${tag}`, metric: `bulk_${tag}`, aggregation: 'sum' }).expect(201);
    const plan = await api
      .http()
      .post('/billing/plans')
      .set(admin())
      .send({ name: `Bulk ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ name: 'Bulk', pricingModel: 'package', unitPrice: '1000', packageSize: '1', meterId: meter.body.data.id }] })
      .expect(201);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Bulk ${tag}`, currency: 'USD' }).expect(201);
    const entity = await api
      .http()
      .post('/entities')
      .set(system())
      .send({ type: 'customer', name: `Bulk ${tag}`, customerId: customer.body.data.id, address: { line1: '1 Main St', city: 'Berlin', country: 'DE' } })
      .expect(201);
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-10-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    await api.http().post(`/contracts/${contract.body.data.id}/activate`).set(system()).send({}).expect(200);
    // 9e19 packages at 1000 each: 9e22, more than the 20 integer digits of an invoice line's price.
    await api
      .http()
      .post('/events/batch')
      .set(system())
      .send({ events: [{ CustomerEntityId: entity.body.data.id, metric: `bulk_${tag}`, value: '90000000000000000000', timestamp: '2026-10-20T00:00:00Z' }] })
      .expect(200);

    const run = await runTo({ billingDate: '2026-11-01', contractIds: [good.contractId, contract.body.data.id] });
    expect(run).toMatchObject({ status: 'completed', progress: { done: 2, failed: 1 } });
    expect(run.failures).toEqual([{ contractId: contract.body.data.id, code: expect.any(String), message: 'Bulk: price 90000000000000000000000.00 must have at most 20 digits before the decimal point' }]);
    expect(await linesOf(good.contractId)).toHaveLength(3);
  });

  it('when an invoice would not fit its columns once taxed, then the contract fails alone and no draft is left; a plan price no line can hold is refused', async () => {
    const tag = randomUUID().slice(0, 8);
    const good = await workedExample();
    const admin = () => bearer(tenant.adminToken);
    const item = { name: 'Seats', pricingModel: 'flat', unitPrice: '600000' };
    // 600,000 × 10^14 is 6 × 10^19: a line fits (20 digits before the point), and a 100 % tax takes the total past it.
    const plan = await api.http().post('/billing/plans').set(admin()).send({ name: `Seats ${tag}`, currency: 'USD', billingPeriod: 'monthly', items: [{ ...item, quantity: '100000000000000' }] }).expect(201);
    const customer = await api.http().post('/customers').set(system()).send({ name: `Seats ${tag}`, currency: 'USD' }).expect(201);
    const contract = await api.http().post('/contracts').set(system()).send({ customerId: customer.body.data.id, currency: 'USD', startDate: '2026-11-01', plans: [{ planId: plan.body.data.id }] }).expect(201);
    const contractId = contract.body.data.id as string;
    await api.http().post(`/contracts/${contractId}/activate`).set(system()).send({}).expect(200);
    await api.http().post(`/contracts/${contractId}/taxes`).set(system()).send({ name: 'Levy', rate: '100' }).expect(201);

    const run = await runTo({ billingDate: '2026-11-01', contractIds: [good.contractId, contractId] });
    expect(run).toMatchObject({ status: 'completed', progress: { done: 2, failed: 1 }, invoicesCreated: 1 });
    const message = "the invoice's total would be 120000000000000000000.00, more than an invoice can hold (at most 20 digits before the point)";
    expect(run.failures).toEqual([{ contractId, code: expect.any(String), message }]);
    expect(await linesOf(contractId)).toHaveLength(0);
    expect(await linesOf(good.contractId)).toHaveLength(3);
    const upcoming = await api.http().get(`/contracts/${contractId}/upcoming-invoice`).query({ date: '2026-11-01' }).set(system());
    expect([upcoming.status, upcoming.body.errors]).toEqual([409, [{ code: expect.any(Number), message }]]);

    const refused = await api.http().post('/billing/plans').set(admin()).send({ name: `Seats ${tag} 2`, currency: 'USD', billingPeriod: 'monthly', items: [{ ...item, quantity: '200000000000000' }] });
    expect([refused.status, refused.body.errors]).toEqual([400, [{ code: expect.any(Number), path: 'body.items.0.quantity', message: expect.stringContaining('an invoice line holds at most 20 digits before the point') }]]);
  });

  it('when the organisation auto-advances, then each draft a run makes is raised and sent by its own workflow, with gapless numbers', async () => {
    const owner = await createTenant(api, 'invoice-runs-auto');
    await api.http().put('/organisation/settings').set(bearer(owner.adminToken)).send({ autoRaiseGeneratedInvoices: true, autoSendGeneratedInvoices: true }).expect(200);
    const first = await workedExample(owner);
    const second = await workedExample(owner);

    const run = await runTo({ billingDate: '2026-11-01', contractIds: [first.contractId, second.contractId] }, owner);
    await recordHistory(api, `invoice-run:${run.id}`, 'invoice-run-auto-advance');

    expect(run).toMatchObject({ status: 'completed', invoicesCreated: 2, failures: [] });
    const invoices = await api.db('invoices').where({ organisation_id: owner.organisationId }).orderBy('number').select('status', 'number', 'invoice_run_id');
    expect(invoices).toEqual([
      { status: 'sent', number: 'INV-000001', invoice_run_id: run.id },
      { status: 'sent', number: 'INV-000002', invoice_run_id: run.id },
    ]);
  });
});
