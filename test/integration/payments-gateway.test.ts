import type Stripe from 'stripe';
import { bearer, createTenant, type Tenant, type TestApi } from './support/harness';
import { startBreakableStack, type BreakableStack } from './support/breakable-stack';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { suiteStripe, stripeClientOf, useCard } from './support/localstripe';
import { waitFor } from '../support/wait';

jest.setTimeout(300_000);

/**
 * Collection through Stripe on the real stack: the API and a worker that relays the outbox (so raising an
 * invoice starts its collection), against localstripe, a stateful fake of Stripe's API that the official
 * client talks to. Stripe's webhooks are delivered by the test, signed as Stripe signs them, so that each
 * test says when one arrives.
 */
const SECRET_KEY = 'sk_test_localstripe_0001';
const WEBHOOK_SECRET = 'whsec_localstripe_test';

let stack: BreakableStack;
let api: TestApi;
let tenant: Tenant;
let stripe: Stripe;

const admin = () => bearer(tenant.adminToken);
const system = () => bearer(tenant.systemToken);

beforeAll(async () => {
  stack = await startBreakableStack('payments', { WEBHOOK_RELAY: 'true' });
  api = stack.api;
  tenant = await createTenant(api, 'payments');
  stripe = stripeClientOf(suiteStripe(), SECRET_KEY);
  const saved = await api.http().put('/payment-providers/stripe').set(admin()).send({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET });
  expect(saved.status).toBe(200);
  expect(saved.body.data).toMatchObject({ provider: 'stripe', secretKeyLast4: '0001', webhookSecretSet: true, collectOn: 'raised' });
});

afterAll(async () => {
  await stack?.close();
});

/** A customer linked to a Stripe customer (created there) whose default card is `cardNumber`. */
async function linkedCustomer(cardNumber: string): Promise<BillingFixture & { stripeCustomerId: string }> {
  const fixture = await createBillingFixture(api, tenant);
  const linked = await api.http().post(`/customers/${fixture.customerId}/payment-provider`).set(system()).send({ provider: 'stripe' });
  expect(linked.status).toBe(201);
  expect(linked.body.data.defaultPaymentMethod).toBeNull();
  const stripeCustomerId = linked.body.data.providerCustomerId as string;
  await useCard(stripe, stripeCustomerId, cardNumber);
  return { ...fixture, stripeCustomerId };
}


async function raisedInvoice(fixture: BillingFixture, price = 100): Promise<string> {
  const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price }])).expect(201);
  await api.http().post(`/invoices/${created.body.data.id}/raise`).set(system()).send({}).expect(200);
  return created.body.data.id as string;
}

type Attempt = { id: string; attempt: number; status: string; providerPaymentId: string | null; paymentId: string | null; failure: { code: string } | null; amount: string; refundedAmount: string };

async function attemptsOf(invoiceId: string): Promise<Attempt[]> {
  return (await api.http().get(`/invoices/${invoiceId}/payment-attempts`).set(system()).expect(200)).body.data.items;
}

async function invoiceStatus(invoiceId: string): Promise<string> {
  return (await api.http().get(`/invoices/${invoiceId}`).set(system()).expect(200)).body.data.status;
}

/** The gateway's payments made for the invoice, read from the fake itself. */
async function chargesAtGateway(invoiceId: string): Promise<Stripe.PaymentIntent[]> {
  const all: Stripe.PaymentIntent[] = [];
  for await (const intent of stripe.paymentIntents.list({ limit: 100 })) all.push(intent);
  return all.filter((intent) => intent.metadata?.invoice_id === invoiceId);
}

/** Posts a Stripe event to the organisation's webhook, signed with `secret` as Stripe signs it. */
async function deliverWebhook(event: object, secret = WEBHOOK_SECRET) {
  const payload = JSON.stringify(event);
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret });
  return api.http().post(`/payment-providers/stripe/webhook/${tenant.organisationId}`).set('Content-Type', 'application/json').set('Stripe-Signature', signature).send(payload);
}

function paymentIntentEvent(id: string, type: string, intent: Stripe.PaymentIntent) {
  return { id, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object: intent }, api_version: '2024-06-20', livemode: false, pending_webhooks: 1, request: null };
}

describe('collection through Stripe', () => {
  it('when an invoice of a linked customer is raised, then it is charged once at the gateway and paid with that one payment, which only a refund takes back', async () => {
    const fixture = await linkedCustomer('4242424242424242');
    const link = await api.http().get(`/customers/${fixture.customerId}/payment-provider`).set(system()).expect(200);
    expect(link.body.data.defaultPaymentMethod).toEqual({ brand: 'visa', last4: '4242' });

    const invoiceId = await raisedInvoice(fixture, 119.5);
    await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);

    const attempts = await attemptsOf(invoiceId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, status: 'succeeded', amount: '119.50', failure: null });
    const charges = await chargesAtGateway(invoiceId);
    expect(charges.map((intent) => [intent.id, intent.amount, intent.currency, intent.status])).toEqual([[attempts[0]!.providerPaymentId, 11950, 'usd', 'succeeded']]);

    const payments = (await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items;
    expect(payments.map((payment: { id: string; amount: string; method: string; reference: string }) => [payment.id, payment.amount, payment.method, payment.reference])).toEqual([
      [attempts[0]!.paymentId, '119.50', 'stripe', attempts[0]!.providerPaymentId],
    ]);

    // Money the gateway took goes back only through a refund.
    const undo = await api.http().post(`/fsm/invoice/${invoiceId}/undo`).set(admin()).send({});
    expect(undo.status).toBe(409);
    expect(JSON.stringify(undo.body)).toContain('refund');
    expect((await api.http().delete(`/payments/${attempts[0]!.paymentId}`).set(admin())).status).toBe(409);
    expect(await invoiceStatus(invoiceId)).toBe('paid');
  });

  it('when the same webhook is delivered twice, then it is handled once and the invoice keeps one payment; a bad signature is refused and records nothing', async () => {
    const fixture = await linkedCustomer('4242424242424242');
    const invoiceId = await raisedInvoice(fixture);
    await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);
    const [intent] = await chargesAtGateway(invoiceId);
    const event = paymentIntentEvent(`evt_twice_${invoiceId}`, 'payment_intent.succeeded', intent!);

    const first = await deliverWebhook(event);
    const second = await deliverWebhook(event);
    expect([first.status, first.body.data]).toEqual([200, { received: true, duplicate: false }]);
    expect([second.status, second.body.data]).toEqual([200, { received: true, duplicate: true }]);
    const payments = (await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items;
    expect(payments).toHaveLength(1);

    const forged = await deliverWebhook(paymentIntentEvent(`evt_forged_${invoiceId}`, 'payment_intent.succeeded', intent!), 'whsec_not_ours');
    expect(forged.status).toBe(400);
    expect(forged.body.errors[0]).toMatchObject({ code: 1001, path: 'headers.stripe-signature' });
    const recorded = await api.db('payment_gateway_events').where({ organisation_id: tenant.organisationId }).pluck('event_id');
    expect(recorded).toContain(event.id);
    expect(recorded).not.toContain(`evt_forged_${invoiceId}`);

    // Well signed but not an event: 400 at the body, not a 500.
    for (const malformed of [{ id: `evt_nodata_${invoiceId}`, type: 'payment_intent.succeeded' }, { ...event, id: `evt_nodata2_${invoiceId}`, data: null }]) {
      const res = await deliverWebhook(malformed);
      expect([res.status, res.body.errors?.[0]?.path]).toEqual([400, 'body']);
    }
    // Well signed, about a payment the account does not have (a test event): taken, once, and nothing recorded.
    const stranger = paymentIntentEvent(`evt_stranger_${invoiceId}`, 'payment_intent.succeeded', { ...intent!, id: 'pi_not_at_this_account' });
    const taken = await deliverWebhook(stranger);
    expect([taken.status, taken.body.data]).toEqual([200, { received: true, duplicate: false }]);
    expect((await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items).toHaveLength(1);
  });

  // With no days between attempts they follow each other about a second apart, so which one meets the new
  // card depends on timing here; payments-dunning.test.ts pins the third attempt on the time-skipping server.
  it('when the card is declined and a dunning campaign tries again at once, then payment.failed is announced per failure and the first attempt after the card is changed pays', async () => {
    const campaign = await api.http().post('/dunning-campaigns').set(admin()).send({ name: 'Ten tries', maxAttempts: 10, daysBetweenAttempts: 0, minimumAmountDue: { USD: '1' } });
    // Shown with its currency's digits, as every amount.
    expect([campaign.status, campaign.body.data?.minimumAmountDue]).toEqual([201, { USD: '1.00' }]);
    try {
      // A card that attaches but whose charges are declined.
      const fixture = await linkedCustomer('4000000000000341');
      const invoiceId = await raisedInvoice(fixture, 80);
      await waitFor(async () => ((await attemptsOf(invoiceId)).filter((attempt) => attempt.status === 'failed').length >= 2 ? true : undefined), 60_000);
      await useCard(stripe, fixture.stripeCustomerId, '4242424242424242');
      await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);

      const attempts = await attemptsOf(invoiceId);
      expect(attempts.length).toBeGreaterThanOrEqual(3);
      expect(attempts.map((attempt) => [attempt.attempt, attempt.status])).toEqual(attempts.map((_, i) => [i + 1, i === attempts.length - 1 ? 'succeeded' : 'failed']));
      expect(attempts[0]!.failure?.code).toBeTruthy();
      const failed = await api.db('webhook_events').where({ organisation_id: tenant.organisationId, type: 'payment.failed' }).select('payload');
      expect(failed.filter((row: { payload: { data: { invoiceId: string } } }) => row.payload.data.invoiceId === invoiceId)).toHaveLength(attempts.length - 1);
      expect((await chargesAtGateway(invoiceId)).filter((intent) => intent.status === 'succeeded')).toHaveLength(1);
    } finally {
      await api.http().delete(`/dunning-campaigns/${campaign.body.data.id}`).set(admin()).expect(200);
    }
  });

  it('when a payment is taken at the gateway with no record here, then reconciliation lists it, and its webhook records it as the invoice\'s payment', async () => {
    // Collected when sent, so that raising starts nothing: the payment is made at the gateway alone.
    await api.http().put('/payment-providers/stripe').set(admin()).send({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, collectOn: 'sent' }).expect(200);
    try {
      const fixture = await linkedCustomer('4242424242424242');
      const invoiceId = await raisedInvoice(fixture, 42);
      const method = (await stripe.customers.retrieve(fixture.stripeCustomerId)) as Stripe.Customer;
      /** A payment taken at the gateway alone, on the customer's card, naming the invoice. */
      const paidAtGateway = (amount: number) =>
        stripe.paymentIntents.create({
          amount,
          currency: 'usd',
          customer: fixture.stripeCustomerId,
          payment_method: method.invoice_settings.default_payment_method as string,
          confirm: true,
          off_session: true,
          metadata: { organisation_id: tenant.organisationId, invoice_id: invoiceId },
        });
      // A payment naming the invoice for less than it owes is not the invoice's: it pays nothing and is left to reconciliation.
      const part = await paidAtGateway(100);
      expect((await deliverWebhook(paymentIntentEvent(`evt_part_${invoiceId}`, 'payment_intent.succeeded', part))).status).toBe(200);
      expect(await attemptsOf(invoiceId)).toEqual([]);
      expect(await invoiceStatus(invoiceId)).toBe('raised');
      const intent = await paidAtGateway(4200);
      expect(intent.status).toBe('succeeded');

      const report = await api.http().get('/payment-providers/stripe/reconciliation?days=1&refresh=true').set(admin()).expect(200);
      expect(report.body.data.differences).toContainEqual({ kind: 'missing_here', providerPaymentId: intent.id, attemptId: null, invoiceId, gateway: { status: 'succeeded', amount: '42.00', currency: 'USD' }, ours: null });

      // Its whole amount still owed: recorded once, however many deliveries race.
      const deliveries = await Promise.all(Array.from({ length: 6 }, (_, i) => deliverWebhook(paymentIntentEvent(`evt_unrecorded_${i}_${invoiceId}`, 'payment_intent.succeeded', intent))));
      expect(deliveries.map((delivery) => delivery.status)).toEqual([200, 200, 200, 200, 200, 200]);
      await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);
      const attempts = await attemptsOf(invoiceId);
      expect(attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.providerPaymentId])).toEqual([[1, 'succeeded', intent.id]]);
      const payments = (await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items as Array<{ amount: string }>;
      expect(payments.map((payment) => payment.amount)).toEqual(['42.00']);
      const after = await api.http().get('/payment-providers/stripe/reconciliation?days=1&refresh=true').set(admin()).expect(200);
      expect(after.body.data.differences.filter((difference: { providerPaymentId: string }) => difference.providerPaymentId === intent.id)).toEqual([]);
      expect(after.body.data.differences).toContainEqual(expect.objectContaining({ kind: 'missing_here', providerPaymentId: part.id, invoiceId }));
    } finally {
      await api.http().put('/payment-providers/stripe').set(admin()).send({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET }).expect(200);
    }
  });

  it('when a manual mark-paid of a linked customer\'s invoice is undone, then the invoice owes again and the gateway collects it', async () => {
    // Marked paid before the customer was linked: nothing was collected.
    const fixture = await createBillingFixture(api, tenant);
    const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price: 64 }])).expect(201);
    const invoiceId = created.body.data.id as string;
    await api.http().post(`/invoices/${invoiceId}/mark-paid`).set(system()).send({ paidDate: '2026-11-20' }).expect(200);
    const linked = await api.http().post(`/customers/${fixture.customerId}/payment-provider`).set(system()).send({ provider: 'stripe' }).expect(201);
    await useCard(stripe, linked.body.data.providerCustomerId as string, '4242424242424242');
    expect(await chargesAtGateway(invoiceId)).toEqual([]);
    const undone = await api.http().post(`/fsm/invoice/${invoiceId}/undo`).set(admin()).send({});
    expect([undone.status, undone.body.data?.status]).toEqual([200, expect.stringMatching(/^(raised|sent)$/)]);
    await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);
    expect((await chargesAtGateway(invoiceId)).map((intent) => [intent.amount, intent.status])).toEqual([[6400, 'succeeded']]);
  });

  it('when part of an invoice is paid by bank transfer before it is sent, then the gateway charges the rest only, and refunds at most what it took', async () => {
    await api.http().put('/payment-providers/stripe').set(admin()).send({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, collectOn: 'sent' }).expect(200);
    try {
      const fixture = await linkedCustomer('4242424242424242');
      const invoiceId = await raisedInvoice(fixture, 100);
      await api.http().post('/payments').set(system()).send({ customerId: fixture.customerId, invoiceId, amount: '30', currency: 'USD', paidAt: '2026-11-20T10:00:00Z', method: 'bank_transfer' }).expect(201);
      await api.http().post(`/invoices/${invoiceId}/send`).set(system()).send({}).expect(200);
      await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);
      expect((await chargesAtGateway(invoiceId)).map((intent) => [intent.amount, intent.status])).toEqual([[7000, 'succeeded']]);
      const payments = (await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items as Array<{ amount: string; method: string }>;
      expect(payments.map((payment) => [payment.amount, payment.method]).sort()).toEqual([
        ['30.00', 'bank_transfer'],
        ['70.00', 'stripe'],
      ]);

      // The gateway pays a refund back from its 70.00: a note of all 100.00 is refused before it is asked.
      const whole = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'Everything', amount: '100', refund: true });
      expect([whole.status, whole.body.errors?.[0]?.message]).toEqual([409, expect.stringContaining('holds 70.00 USD of what it collected')]);
      const [intent] = await chargesAtGateway(invoiceId);
      expect((await stripe.refunds.list({ payment_intent: intent!.id })).data).toEqual([]);
      await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'The card part', amount: '70', refund: true }).expect(201);
      await waitFor(async () => ((await attemptsOf(invoiceId))[0]!.refundedAmount === '70.00' ? true : undefined), 60_000);
    } finally {
      await api.http().put('/payment-providers/stripe').set(admin()).send({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET }).expect(200);
    }
  });
});

describe('refunds', () => {
  it('when a credit note refunds part of an invoice a gateway collected, then the gateway pays it back once, never beyond what it took, and the note can no longer be voided', async () => {
    const fixture = await linkedCustomer('4242424242424242');
    const invoiceId = await raisedInvoice(fixture, 100);
    await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 60_000);
    const [intent] = await chargesAtGateway(invoiceId);

    const note = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'Goodwill', amount: '30', refund: true });
    expect(note.status).toBe(201);
    expect(note.body.data).toMatchObject({ status: 'issued', settlement: 'refund', total: '30.00' });
    await waitFor(async () => ((await attemptsOf(invoiceId))[0]!.refundedAmount === '30.00' ? true : undefined), 60_000);
    const refunds = await stripe.refunds.list({ payment_intent: intent!.id });
    expect(refunds.data.map((refund) => [refund.amount, refund.status, refund.metadata?.credit_note_id])).toEqual([[3000, 'succeeded', note.body.data.id]]);
    expect((await attemptsOf(invoiceId))[0]!.status).toBe('succeeded');

    // 70.00 is left of what was taken: a refund of more is refused before anything is asked of the gateway.
    const beyond = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'Too much', amount: '80', refund: true });
    expect(beyond.status).toBe(409);
    expect((await stripe.refunds.list({ payment_intent: intent!.id })).data).toHaveLength(1);

    const voided = await api.http().post(`/credit-notes/${note.body.data.id}/void`).set(admin()).send({});
    expect(voided.status).toBe(409);
    expect(JSON.stringify(voided.body)).toContain('payment gateway');

    // 50.00 refunded at the gateway's dashboard: its webhook reads the refunds back.
    await stripe.refunds.create({ payment_intent: intent!.id, amount: 5000 });
    const refundedEvent = { id: `evt_refunded_${invoiceId}`, object: 'event', type: 'charge.refunded', created: Math.floor(Date.now() / 1000), data: { object: { id: 'ch_any', object: 'charge', payment_intent: intent!.id } } };
    expect((await deliverWebhook(refundedEvent)).status).toBe(200);
    expect((await attemptsOf(invoiceId))[0]).toMatchObject({ status: 'succeeded', refundedAmount: '80.00' });

    // No credit note books those 50.00 yet: reconciliation says so.
    const unbooked = async () =>
      ((await api.http().get('/payment-providers/stripe/reconciliation?days=1&refresh=true').set(admin()).expect(200)).body.data.differences as Array<{ kind: string; invoiceId: string; gateway: { amount: string } }>)
        .filter((difference) => difference.invoiceId === invoiceId)
        .map((difference) => [difference.kind, difference.gateway.amount]);
    expect(await unbooked()).toEqual([['refund_unbooked', '50.00']]);
    // A refund note books them, up to what is unbooked, and asks Stripe for nothing: it paid them already.
    const more = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'Refunded at the dashboard', amount: '50.01', refund: true });
    expect([more.status, JSON.stringify(more.body)]).toEqual([409, expect.stringContaining('50.00 USD of this invoice by its own means')]);
    const booking = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'Refunded at the dashboard', amount: '50', refund: true });
    expect([booking.status, booking.body.data?.settlement]).toEqual([201, 'refund']);
    await waitFor(async () => (JSON.stringify(await unbooked()) === '[]' ? true : undefined), 60_000);
    expect((await stripe.refunds.list({ payment_intent: intent!.id })).data).toHaveLength(2);

    // The last 20.00 are still at the gateway: a refund note has it pay them back; all of it is refunded.
    const last = await api.http().post(`/invoices/${invoiceId}/credit-notes`).set(system()).send({ reason: 'The rest', amount: '20', refund: true });
    expect(last.status).toBe(201);
    await waitFor(async () => ((await attemptsOf(invoiceId))[0]!.refundedAmount === '100.00' ? true : undefined), 60_000);
    expect((await attemptsOf(invoiceId))[0]!.status).toBe('refunded');
    expect((await stripe.refunds.list({ payment_intent: intent!.id })).data.map((refund) => refund.amount).sort((a, b) => a - b)).toEqual([2000, 3000, 5000]);
    const payments = await api.db('payments').where({ invoice_id: invoiceId }).whereNull('deleted_at').orderBy('amount', 'desc').pluck('amount');
    expect(payments.map(Number)).toEqual([100, -20, -30, -50]);
    expect(await unbooked()).toEqual([]);
  });
});

describe('a worker killed between the charge and its record', () => {
  it('when the worker dies after Stripe took the money but before the attempt recorded it, then the next worker finds the charge: one charge at the gateway, one payment here', async () => {
    const fixture = await linkedCustomer('4242424242424242');
    const created = await api.http().post('/invoices').set(system()).send(invoiceBody(fixture.contractPlanId, [{ title: 'Platform fee', quantity: 1, price: 64 }])).expect(201);
    const invoiceId = created.body.data.id as string;
    // The record of a succeeded charge waits on a lock the test holds: the worker is caught after the
    // charge, inside the transaction that would record it.
    await api.db.raw(`CREATE OR REPLACE FUNCTION hold_charge_record() RETURNS trigger AS $$
      BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NEW; END $$ LANGUAGE plpgsql`);
    await api.db.raw(`CREATE TRIGGER hold_charge_record BEFORE UPDATE ON payment_attempts FOR EACH ROW
      WHEN (OLD.status = 'pending' AND NEW.status = 'succeeded' AND NEW.invoice_id = '${invoiceId}') EXECUTE FUNCTION hold_charge_record()`);
    const blocker = await api.db.transaction();
    try {
      await blocker.raw('SELECT pg_advisory_xact_lock(4242)');
      await api.http().post(`/invoices/${invoiceId}/raise`).set(system()).send({}).expect(200);
      await waitFor(async () => {
        const waiting = await api.db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'");
        return waiting.rows[0].n > 0 ? true : undefined;
      }, 60_000);
      expect((await chargesAtGateway(invoiceId)).map((intent) => intent.status)).toEqual(['succeeded']);
      await stack.killWorker();
    } finally {
      await blocker.commit();
      await api.db.raw('DROP TRIGGER IF EXISTS hold_charge_record ON payment_attempts');
    }
    expect((await attemptsOf(invoiceId)).map((attempt) => attempt.status)).toEqual(['pending']);
    await stack.startWorker();

    await waitFor(async () => ((await invoiceStatus(invoiceId)) === 'paid' ? true : undefined), 120_000);
    const charges = await chargesAtGateway(invoiceId);
    expect(charges).toHaveLength(1);
    const attempts = await attemptsOf(invoiceId);
    expect(attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.providerPaymentId])).toEqual([[1, 'succeeded', charges[0]!.id]]);
    const payments = (await api.http().get(`/payments?invoiceId=${invoiceId}`).set(system()).expect(200)).body.data.items;
    expect(payments.map((payment: { reference: string }) => payment.reference)).toEqual([charges[0]!.id]);
  });
});

describe('the daily reconciliation', () => {
  it('when the organisation saved its credentials, then a daily Schedule compares the gateway with our records and the report shows what it found', async () => {
    const schedule = api.temporal.client.schedule.getHandle(`payment-reconciliation:${tenant.organisationId}`);
    const described = await schedule.describe();
    expect(described.spec.calendars).toEqual([expect.objectContaining({ hour: [{ start: 5, end: 5, step: 1 }], minute: [{ start: 0, end: 0, step: 1 }] })]);
    const before = (await api.http().get('/payment-providers/stripe/reconciliation').set(admin()).expect(200)).body.data;
    await schedule.trigger();
    const after = await waitFor(async () => {
      const report = (await api.http().get('/payment-providers/stripe/reconciliation').set(admin()).expect(200)).body.data;
      return report.checkedAt > before.checkedAt ? report : undefined;
    }, 60_000);
    expect(after).toMatchObject({ provider: 'stripe', days: 3 });
    expect(Array.isArray(after.differences)).toBe(true);
  });
});

describe('gateway settings', () => {
  it('when the credentials are read back, then neither secret is shown, and Postgres holds them sealed', async () => {
    const read = await api.http().get('/payment-providers/stripe').set(admin()).expect(200);
    expect(JSON.stringify(read.body)).not.toContain(SECRET_KEY);
    expect(JSON.stringify(read.body)).not.toContain(WEBHOOK_SECRET);
    const row = await api.db('payment_provider_accounts').where({ organisation_id: tenant.organisationId }).first();
    expect(row.secret_key).not.toContain(SECRET_KEY);
    expect(row.webhook_secret).not.toContain(WEBHOOK_SECRET);
    expect((await api.http().get('/payment-providers/stripe').set(system())).status).toBe(403);
  });
});
