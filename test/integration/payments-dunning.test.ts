import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type Stripe from 'stripe';
import { createPaymentActivities } from '../../activities/payments.activities';
import { resolveContractPlan } from '../../src/modules/contracts';
import { createInvoiceService } from '../../src/modules/invoices';
import { invoiceSettlements } from '../../src/modules/settlements';
import { createServices, serviceDepsFrom } from '../../src/services';
import { invoiceCollectionWorkflow } from '../../workflows/invoice-collection.workflow';
import { invoiceCollectionWorkflowId } from '../../workflows/ids';
import { collectionNudge } from '../../workflows/invoice-collection.types';
import { timeSkippingEnvironment } from '../workflow/support/environment';
import { waitFor } from '../support/wait';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { suiteStripe, stripeClientOf, useCard } from './support/localstripe';
import { workflowCode } from '../support/workflow-code';

jest.setTimeout(300_000);

/**
 * Dunning over days, on the time-skipping test server: the invoice's collection workflow runs there with
 * the real activities (Postgres, the suite's localstripe, and the invoice's own workflow on the suite's
 * server for the payment), and the test moves the server's clock by the campaign's days between attempts.
 * The organisation collects on `sent` and the invoice is only raised, so that the suite's worker, which
 * relays the outbox, starts no collection of its own for it.
 */
const SECRET_KEY = 'sk_test_dunning_0002';
const TASK_QUEUE = 'collection-dunning';

let api: TestApi;
let tenant: Tenant;
let env: TestWorkflowEnvironment;
let stripe: Stripe;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'dunning');
  env = await timeSkippingEnvironment();
  stripe = stripeClientOf(suiteStripe(), SECRET_KEY);
  await api.http().put('/payment-providers/stripe').set(bearer(tenant.adminToken)).send({ secretKey: SECRET_KEY, webhookSecret: 'whsec_dunning', collectOn: 'sent' }).expect(200);
});

afterAll(async () => {
  await env?.teardown();
  await api?.close();
});


it('when a card is declined, then payment.failed is announced, dunning tries again after the campaign\'s days on durable timers, and the third attempt pays the invoice', async () => {
  const system = bearer(tenant.systemToken);
  await api.http().post('/dunning-campaigns').set(bearer(tenant.adminToken)).send({ name: 'Every three days', maxAttempts: 3, daysBetweenAttempts: 3 }).expect(201);
  const fixture = await createBillingFixture(api, tenant);
  const linked = await api.http().post(`/customers/${fixture.customerId}/payment-provider`).set(system).send({ provider: 'stripe' }).expect(201);
  // Attaches, then every charge is declined.
  await useCard(stripe, linked.body.data.providerCustomerId, '4000000000000341');
  const created = await api.http().post('/invoices').set(system).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price: 250 }])).expect(201);
  const invoiceId = created.body.data.id as string;
  await api.http().post(`/invoices/${invoiceId}/raise`).set(system).send({}).expect(200);

  const services = createServices(serviceDepsFrom(api.config, api.db));
  const invoices = createInvoiceService({ db: api.db, temporal: api.temporal }, resolveContractPlan, invoiceSettlements);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue: TASK_QUEUE,
    ...workflowCode(),
    activities: createPaymentActivities(services, { invoices }),
  });
  const statuses = async () => (await api.http().get(`/invoices/${invoiceId}/payment-attempts`).set(system).expect(200)).body.data.items.map((attempt: { status: string }) => attempt.status) as string[];
  const started = Date.now();

  const outcome = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start(invoiceCollectionWorkflow, { workflowId: invoiceCollectionWorkflowId(invoiceId), taskQueue: TASK_QUEUE, args: [{ organisationId: tenant.organisationId, invoiceId }] });
    await waitFor(async () => ((await statuses()).join() === 'failed' ? true : undefined), 60_000);
    // Two days on, the campaign's wait is not over: no second attempt yet. A nudge (as the failure's own
    // webhook sends) looks again, and waits out the day that is left, not three more.
    await env.sleep('2 days');
    expect(await statuses()).toEqual(['failed']);
    await handle.signal(collectionNudge);
    await env.sleep('1 day');
    await waitFor(async () => ((await statuses()).join() === 'failed,failed' ? true : undefined), 60_000);
    await useCard(stripe, linked.body.data.providerCustomerId, '4242424242424242');
    await env.sleep('3 days');
    return handle.result();
  });

  expect(outcome).toEqual({ reason: 'the gateway collected the invoice' });
  expect(await statuses()).toEqual(['failed', 'failed', 'succeeded']);
  expect((await api.http().get(`/invoices/${invoiceId}`).set(system).expect(200)).body.data.status).toBe('paid');
  const failures = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'payment.failed' }).orderBy('id').select('payload');
  expect(failures.map((row: { payload: { data: { invoiceId: string; attempt: number } } }) => [row.payload.data.invoiceId, row.payload.data.attempt])).toEqual([
    [invoiceId, 1],
    [invoiceId, 2],
  ]);
  // Six days of timers, skipped: the server's clock moved, the test's barely did.
  expect(Date.now() - started).toBeLessThan(120_000);
});

describe('the collection\'s steps, over Postgres and the fake', () => {
  async function raisedFor(cardNumber: string, price: number, currency = 'USD') {
    const system = bearer(tenant.systemToken);
    const fixture = await createBillingFixture(api, tenant, currency);
    const linked = await api.http().post(`/customers/${fixture.customerId}/payment-provider`).set(system).send({ provider: 'stripe' }).expect(201);
    await useCard(stripe, linked.body.data.providerCustomerId, cardNumber);
    const created = await api.http().post('/invoices').set(system).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price }])).expect(201);
    await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system).send({}).expect(200);
    return { invoiceId: created.body.data.id as string, stripeCustomerId: linked.body.data.providerCustomerId as string };
  }

  it('when the gateway does not take the invoice\'s currency, then the attempt fails once and the dunning campaign does not try again', async () => {
    const { collection } = createServices(serviceDepsFrom(api.config, api.db));
    await api.http().post('/fx-rates').set(bearer(tenant.adminToken)).send({ fromCurrency: 'KWD', toCurrency: 'USD', rate: '3.25', effectiveDate: '2026-01-01' }).expect(201);
    const { invoiceId } = await raisedFor('4242424242424242', 12.5, 'KWD');
    const step = (await collection.nextStep({ organisationId: tenant.organisationId, invoiceId })) as { next: 'charge'; attemptId: string };
    expect(step.next).toBe('charge');
    expect(await collection.charge({ organisationId: tenant.organisationId, attemptId: step.attemptId })).toBe('failed');
    expect(await collection.nextStep({ organisationId: tenant.organisationId, invoiceId, retryAfterAttempt: 1 })).toEqual({ next: 'done', reason: 'the gateway does not collect KWD' });
    // A campaign's amounts have their currency's decimals, as every amount does.
    const odd = await api.http().post('/dunning-campaigns').set(bearer(tenant.adminToken)).send({ name: 'Odd', customerId: 'cus_none', maxAttempts: 2, daysBetweenAttempts: 1, minimumAmountDue: { JPY: '1.5' } });
    expect([odd.status, odd.body.errors?.[0]?.path]).toEqual([400, 'body.minimumAmountDue.JPY']);
  });

  it('when the invoice is paid by other means while its attempt waits to be charged, then the attempt is closed and nothing is charged', async () => {
    const { collection } = createServices(serviceDepsFrom(api.config, api.db));
    const { invoiceId } = await raisedFor('4242424242424242', 70);
    const step = await collection.nextStep({ organisationId: tenant.organisationId, invoiceId });
    expect(step.next).toBe('charge');
    const attemptId = (step as { attemptId: string }).attemptId;
    await api.http().post(`/invoices/${invoiceId}/mark-paid`).set(bearer(tenant.systemToken)).send({ paidDate: '2026-11-26' }).expect(200);

    expect(await collection.charge({ organisationId: tenant.organisationId, attemptId })).toBe('failed');
    const [attempt] = (await api.http().get(`/invoices/${invoiceId}/payment-attempts`).set(bearer(tenant.systemToken)).expect(200)).body.data.items;
    expect(attempt).toMatchObject({ status: 'failed', failure: { code: 'invoice_not_owed', message: 'the invoice is paid and owes nothing: the attempt was not charged' }, providerPaymentId: null });
    const intents = await stripe.paymentIntents.list({ limit: 100 });
    expect(intents.data.filter((intent) => intent.metadata?.invoice_id === invoiceId)).toEqual([]);
    expect(await collection.nextStep({ organisationId: tenant.organisationId, invoiceId })).toEqual({ next: 'done', reason: 'the invoice is paid' });
  });

  it('when Stripe later settles an attempt recorded as failed, then that payment pays the invoice before any new attempt is made', async () => {
    await api.http().post('/dunning-campaigns').set(bearer(tenant.adminToken)).send({ name: 'Late', maxAttempts: 3, daysBetweenAttempts: 1, customerId: undefined }).catch(() => undefined);
    const { collection } = createServices(serviceDepsFrom(api.config, api.db));
    const { invoiceId, stripeCustomerId } = await raisedFor('4000000000000341', 90);
    const first = (await collection.nextStep({ organisationId: tenant.organisationId, invoiceId })) as { next: 'charge'; attemptId: string };
    expect(await collection.charge({ organisationId: tenant.organisationId, attemptId: first.attemptId })).toBe('failed');
    // The gateway takes the money for that attempt after all (as a retry of its own would).
    await useCard(stripe, stripeCustomerId, '4242424242424242');
    const customer = (await stripe.customers.retrieve(stripeCustomerId)) as Stripe.Customer;
    const late = await stripe.paymentIntents.create({
      amount: 9000,
      currency: 'usd',
      customer: stripeCustomerId,
      payment_method: customer.invoice_settings.default_payment_method as string,
      confirm: true,
      off_session: true,
      metadata: { organisation_id: tenant.organisationId, invoice_id: invoiceId, attempt: '1', attempt_id: first.attemptId },
    });
    const recorded = await collection.record(tenant.organisationId, {
      id: late.id,
      status: 'succeeded',
      amountMinor: 9000,
      currency: 'USD',
      actionUrl: null,
      failure: null,
      refundedMinor: 0,
      customer: stripeCustomerId,
      metadata: late.metadata,
      created: late.created,
    });
    expect(recorded).toMatchObject({ id: first.attemptId, status: 'succeeded', provider_payment_id: late.id });
    expect(await collection.nextStep({ organisationId: tenant.organisationId, invoiceId, retryAfterAttempt: 1 })).toEqual({ next: 'settle', attemptId: first.attemptId });
  });
});
