import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createCreditActivities } from '../../activities/credits.activities';
import { newId } from '../../src/db/ids';
import { createServices, serviceDepsFrom } from '../../src/services';
import { creditExpiryWorkflow } from '../../workflows/credit-expiry.workflow';
import { creditExpiryWorkflowId } from '../../workflows/shared';
import { timeSkippingEnvironment } from '../workflow/support/environment';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { workflowCode } from '../support/workflow-code';

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'credit-expiry');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

type Lot = { id: string; amount: string; remaining: string; expiresAt: string | null };

async function grant(fixture: BillingFixture, amount: string, expiresAt?: string) {
  return api.http().post(`/customers/${fixture.customerId}/credits`).set(system()).send({ kind: 'grant', amount, currency: 'USD', reason: 'Welcome credit', expiresAt });
}

async function credits(fixture: BillingFixture): Promise<{ balances: Array<{ balance: string }>; lots: Lot[]; ledger: { items: Array<Record<string, unknown>> } }> {
  return (await api.http().get(`/customers/${fixture.customerId}/credits`).set(system()).expect(200)).body.data;
}

/** A raised invoice of one line at `price`: the credit it took. */
async function raiseInvoice(fixture: BillingFixture, price: number): Promise<{ id: string; creditsApplied: string }> {
  const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price }])).expect(201);
  return (await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system()).send({}).expect(200)).body.data;
}

describe('credit added', () => {
  it('when no kind is given, then the credit is a grant, as the OpenAPI document says', async () => {
    const fixture = await createBillingFixture(api, tenant);
    const added = await api.http().post(`/customers/${fixture.customerId}/credits`).set(system()).send({ amount: '12.5', currency: 'USD', reason: 'Goodwill' });
    expect([added.status, added.body.data.kind, added.body.data.amount, added.body.data.balanceAfter]).toEqual([201, 'grant', '12.50', '12.50']);
    const documented = (await api.http().get('/openapi.json').expect(200)).body.paths['/customers/{id}/credits'].post.requestBody.content['application/json'].schema;
    expect(documented.properties.kind).toMatchObject({ enum: ['grant', 'purchase'], default: 'grant' });
    expect(documented.required).toEqual(['amount', 'currency', 'reason']);
  });
});

describe('credit that expires', () => {
  it('when an invoice takes credit, then it takes the lot that expires first; undone, the credit goes back to the lots it came from', async () => {
    const fixture = await createBillingFixture(api, tenant);
    const never = await grant(fixture, '30');
    expect(never.status).toBe(201);
    const tenDays = inDays(10);
    const fiveDays = inDays(5);
    expect((await grant(fixture, '50', tenDays)).body.data).toMatchObject({ kind: 'grant', amount: '50.00', expiresAt: tenDays });
    await grant(fixture, '20', fiveDays).then((res) => expect(res.status).toBe(201));

    const invoice = await raiseInvoice(fixture, 60);
    expect(invoice.creditsApplied).toBe('60.00');
    const after = await credits(fixture);
    expect(after.balances).toEqual([{ currency: 'USD', balance: '40.00' }]);
    expect(after.lots.map((lot) => [lot.remaining, lot.expiresAt])).toEqual([
      ['10.00', tenDays],
      ['30.00', null],
    ]);

    await api.http().post(`/fsm/invoice/${invoice.id}/undo`).set(system()).send({}).expect(200);
    const back = await credits(fixture);
    expect(back.balances).toEqual([{ currency: 'USD', balance: '100.00' }]);
    expect(back.lots.map((lot) => [lot.remaining, lot.expiresAt])).toEqual([
      ['20.00', fiveDays],
      ['50.00', tenDays],
      ['30.00', null],
    ]);
    // Each expiring grant has its timer: a workflow per lot, sleeping until the expiry.
    for (const lot of back.lots.filter((candidate) => candidate.expiresAt !== null)) {
      const description = await api.temporal.client.workflow.getHandle(creditExpiryWorkflowId(lot.id)).describe();
      expect(description.status.name).toBe('RUNNING');
    }
  });

  it('when a lot is past its expiry and its timer has not fired yet, then the next invoice does not take it: it expires first', async () => {
    const fixture = await createBillingFixture(api, tenant);
    await grant(fixture, '40', inDays(1)).then((res) => expect(res.status).toBe(201));
    const [lot] = (await credits(fixture)).lots;
    // As if the timer were late (its worker down): the expiry has passed.
    await api.db('credit_lots').where({ id: lot!.id }).update({ expires_at: new Date(Date.now() - 60_000) });

    const invoice = await raiseInvoice(fixture, 100);
    expect(invoice.creditsApplied).toBe('0.00');
    const after = await credits(fixture);
    expect(after.balances).toEqual([{ currency: 'USD', balance: '0.00' }]);
    expect(after.ledger.items[0]).toMatchObject({ kind: 'expiry', amount: '-40.00', balanceAfter: '0.00' });
    // Found by the raise rather than by its timer, the expiry is announced all the same.
    const events = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'credits.expired' }).whereRaw("payload->'data'->>'customerId' = ?", [fixture.customerId]);
    expect(events.map((event) => event.payload.data.amount)).toEqual(['-40.00']);
  });

  it('when a credit note put on the balance is voided, then its credit is taken back from its own lot, not from credit that expires sooner', async () => {
    const fixture = await createBillingFixture(api, tenant);
    const soon = inDays(10);
    await grant(fixture, '100', soon).then((res) => expect(res.status).toBe(201));
    // The invoice's 50.00 is paid by the expiring credit; credited back in full, it becomes credit that never expires.
    const invoice = await raiseInvoice(fixture, 50);
    expect(invoice.creditsApplied).toBe('50.00');
    await api.http().post(`/invoices/${invoice.id}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
    const note = await api.http().post(`/invoices/${invoice.id}/credit-notes`).set(system()).send({ reason: 'Goodwill', amount: '50' }).expect(201);
    expect(note.body.data.settlement).toBe('balance');
    expect((await credits(fixture)).lots.map((lot) => [lot.remaining, lot.expiresAt])).toEqual([
      ['50.00', soon],
      ['50.00', null],
    ]);

    await api.http().post(`/credit-notes/${note.body.data.id}/void`).set(bearer(tenant.adminToken)).send({}).expect(200);
    expect((await credits(fixture)).lots.map((lot) => [lot.remaining, lot.expiresAt])).toEqual([['50.00', soon]]);
  });

  it('when an expiring grant reaches its expiry on the running stack, then its own timer expires what is left, once', async () => {
    const fixture = await createBillingFixture(api, tenant);
    // The earliest expiry a grant may have is a minute ahead: this test waits for it on the real server.
    const expiresAt = new Date(Date.now() + 65_000).toISOString();
    await grant(fixture, '12.5', expiresAt).then((res) => expect(res.status).toBe(201));
    const [lot] = (await credits(fixture)).lots;
    const outcome = await api.temporal.client.workflow.getHandle(creditExpiryWorkflowId(lot!.id)).result();
    expect(outcome).toEqual({ expired: '12.50' });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));

    const after = await credits(fixture);
    expect(after.balances).toEqual([{ currency: 'USD', balance: '0.00' }]);
    expect(after.ledger.items.map((entry) => [entry.kind, entry.amount, entry.balanceAfter])).toEqual([
      ['expiry', '-12.50', '0.00'],
      ['grant', '12.50', '12.50'],
    ]);
    const events = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'credits.expired' }).whereRaw("payload->'data'->>'customerId' = ?", [fixture.customerId]);
    expect(events.map((event) => event.payload.data.amount)).toEqual(['-12.50']);
  });

  it('when the expiry is not in the future, or not an instant, then 400 names the field and nothing is added', async () => {
    const fixture = await createBillingFixture(api, tenant);
    for (const expiresAt of [inDays(-1), '2026-13-01T00:00:00Z']) {
      const res = await grant(fixture, '10', expiresAt);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain('body.expiresAt');
    }
    expect((await credits(fixture)).balances).toEqual([]);
  });
});

describe('credit expiry timers (time-skipping server)', () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await timeSkippingEnvironment();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('when 30 days pass on a grant of 40.00 of which an invoice took 15.00, then the 25.00 left expires once, with credits.expired', async () => {
    const services = createServices(serviceDepsFrom(api.config, api.db));
    const fixture = await createBillingFixture(api, tenant);
    const lotId = newId('clt');
    const expiresAt = inDays(30);
    await services.credits.add(tenant.organisationId, fixture.customerId, { kind: 'grant', amount: '40', currency: 'USD', reason: 'Trial credit', expiresAt }, lotId);
    expect((await raiseInvoice(fixture, 15)).creditsApplied).toBe('15.00');

    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: 'credit-expiry',
      ...workflowCode(),
      activities: createCreditActivities(services),
    });
    const input = { organisationId: tenant.organisationId, lotId, expiresAt };
    const expire = (workflowId: string) => env.client.workflow.execute(creditExpiryWorkflow, { workflowId, taskQueue: 'credit-expiry', args: [input] });
    const started = Date.now();
    const [outcome, again] = await worker.runUntil(async () => [await expire(`credit-expiry:${lotId}`), await expire(`credit-expiry:${lotId}:again`)]);
    expect(outcome).toEqual({ expired: '25.00' });
    // Thirty days of timer, skipped: the server's clock moved, the test's barely did.
    expect(Date.now() - started).toBeLessThan(60_000);
    // A second timer for the same lot (a retried start) finds nothing left.
    expect(again).toEqual({ expired: '0' });

    const after = await credits(fixture);
    expect(after.balances).toEqual([{ currency: 'USD', balance: '0.00' }]);
    expect(after.lots).toEqual([]);
    expect(after.ledger.items.map((entry) => [entry.kind, entry.amount, entry.balanceAfter])).toEqual([
      ['expiry', '-25.00', '0.00'],
      ['consumption', '-15.00', '25.00'],
      ['grant', '40.00', '40.00'],
    ]);
    const events = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'credits.expired' }).whereRaw("payload->'data'->>'customerId' = ?", [fixture.customerId]);
    expect(events).toHaveLength(1);
  });
});
