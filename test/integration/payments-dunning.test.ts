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
import { timeSkippingEnvironment } from '../workflow/support/environment';
import { waitFor } from '../support/wait';
import { createBillingFixture, invoiceBody } from './support/billing-fixtures';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { suiteStripe, stripeClientOf, useCard, type LocalStripe } from './support/localstripe';

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

let stripeFake: LocalStripe;
let api: TestApi;
let tenant: Tenant;
let env: TestWorkflowEnvironment;
let stripe: Stripe;

beforeAll(async () => {
  stripeFake = suiteStripe();
  api = await startTestApi();
  tenant = await createTenant(api, 'dunning');
  env = await timeSkippingEnvironment();
  stripe = stripeClientOf(stripeFake, SECRET_KEY);
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
    workflowsPath: require.resolve('../../workflows'),
    activities: createPaymentActivities(services, { invoices }),
  });
  const statuses = async () => (await api.http().get(`/invoices/${invoiceId}/payment-attempts`).set(system).expect(200)).body.data.items.map((attempt: { status: string }) => attempt.status) as string[];
  const started = Date.now();

  const outcome = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start(invoiceCollectionWorkflow, { workflowId: invoiceCollectionWorkflowId(invoiceId), taskQueue: TASK_QUEUE, args: [{ organisationId: tenant.organisationId, invoiceId }] });
    await waitFor(async () => ((await statuses()).join() === 'failed' ? true : undefined), 60_000);
    // Two days on, the campaign's wait is not over: no second attempt yet.
    await env.sleep('2 days');
    expect(await statuses()).toEqual(['failed']);
    await env.sleep('1 day');
    await waitFor(async () => ((await statuses()).join() === 'failed,failed' ? true : undefined), 60_000);
    await useCard(stripe, linked.body.data.providerCustomerId, '4242424242424242');
    await env.sleep('3 days');
    return handle.result();
  });

  expect(outcome).toEqual({ reason: 'the invoice is paid' });
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
