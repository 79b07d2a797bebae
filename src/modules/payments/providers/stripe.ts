import Stripe from 'stripe';
import { GatewayRefusal, GatewayUnavailable, type ChargeRequest, type GatewayEvent, type GatewayPayment, type GatewayPaymentStatus, type GatewayRefund, type PaymentProvider } from './provider';

/** Where the adapter reaches Stripe: its own API by default, a local stand-in (STRIPE_API_BASE) in development. */
export interface StripeEndpoint {
  /** e.g. `https://api.stripe.com` or `http://127.0.0.1:8420`. */
  apiBase: string;
  timeoutMs: number;
}

/**
 * Currencies whose amounts Stripe counts otherwise than ISO 4217's minor units: ISK and UGX are sent with two
 * decimals there, and the three-decimal ones must end in 0. Charging them in ISO minor units would take a
 * wrong amount, so the adapter refuses them.
 */
const CURRENCIES_COUNTED_OTHERWISE = new Set(['ISK', 'UGX', 'BHD', 'JOD', 'KWD', 'OMR', 'TND']);

function assertCountedAlike(currency: string): void {
  if (CURRENCIES_COUNTED_OTHERWISE.has(currency.toUpperCase())) throw new GatewayRefusal(`Stripe counts ${currency} amounts otherwise than ISO 4217: not collected through Stripe`, 'currency_unsupported');
}

/** How many times a call to Stripe is tried at once (one and two retries). */
const STRIPE_TRIES = 3;

/** How many pages of 100 a scan of recent payments reads at most. */
const SCAN_PAGES = 10;

/** Stripe's PaymentIntent states, as a payment attempt's. */
function statusOf(intent: Stripe.PaymentIntent): GatewayPaymentStatus {
  switch (intent.status) {
    case 'succeeded':
      return 'succeeded';
    case 'requires_action':
      return 'requires_action';
    // Declined (back to needing a payment method) or given up: the attempt failed.
    case 'requires_payment_method':
    case 'canceled':
      return intent.last_payment_error || intent.status === 'canceled' ? 'failed' : 'processing';
    default:
      return 'processing';
  }
}

/** The page the customer completes the payment on, when Stripe gives one; an action for Stripe's own SDK (`use_stripe_sdk`) has none. */
function actionUrlOf(intent: Stripe.PaymentIntent): string | null {
  return intent.next_action?.redirect_to_url?.url ?? null;
}

function toPayment(intent: Stripe.PaymentIntent, refundedMinor = 0): GatewayPayment {
  const failure = intent.last_payment_error;
  return {
    id: intent.id,
    status: statusOf(intent),
    amountMinor: intent.amount,
    currency: intent.currency.toUpperCase(),
    actionUrl: intent.status === 'requires_action' ? actionUrlOf(intent) : null,
    failure: failure ? { code: failure.decline_code ?? failure.code ?? 'payment_failed', message: failure.message ?? 'The payment failed' } : null,
    refundedMinor,
    customer: typeof intent.customer === 'string' ? intent.customer : (intent.customer?.id ?? null),
    metadata: { ...(intent.metadata ?? {}) },
    created: intent.created,
  };
}

function toRefund(refund: Stripe.Refund): GatewayRefund {
  const status = refund.status === 'succeeded' ? 'succeeded' : refund.status === 'failed' || refund.status === 'canceled' ? 'failed' : 'pending';
  return { id: refund.id, status, amountMinor: refund.amount };
}

/** Stripe's refusals of the request itself are not retried; everything else (network, 429, 5xx) is. */
function translated(error: unknown): unknown {
  if (error instanceof Stripe.errors.StripeAuthenticationError || error instanceof Stripe.errors.StripePermissionError) {
    return new GatewayRefusal(`Stripe refused the credentials: ${error.message}`, 'authentication');
  }
  if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode !== undefined && error.statusCode < 500 && error.statusCode !== 429 && error.statusCode !== 409) {
    return new GatewayRefusal(`Stripe refused the request: ${error.message}`, error.code ?? (error.statusCode === 404 ? 'resource_missing' : 'invalid_request'));
  }
  if (error instanceof Stripe.errors.StripeError) return new GatewayUnavailable(error.message);
  return error;
}

async function calling<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translated(error);
  }
}

/** A Stripe client per secret key, each aimed at the configured endpoint. */
export function stripeProvider(secretKey: string, endpoint: StripeEndpoint): PaymentProvider {
  const base = new URL(endpoint.apiBase);
  const stripe = new Stripe(secretKey, {
    host: base.hostname,
    port: base.port || (base.protocol === 'http:' ? 80 : 443),
    protocol: base.protocol === 'http:' ? 'http' : 'https',
    // A dropped connection or a 409/429/5xx is tried twice more at once, each POST under one idempotency key;
    // beyond that, retries are the workflow's (bounded, with backoff). `timeoutMs` bounds a call with its
    // retries: each try has a third of it, so that a request waiting on Stripe answers within it.
    timeout: Math.floor(endpoint.timeoutMs / STRIPE_TRIES),
    maxNetworkRetries: STRIPE_TRIES - 1,
    telemetry: false,
  });

  async function refundedOf(intentId: string): Promise<number> {
    let total = 0;
    const refunds = await calling(() => stripe.refunds.list({ payment_intent: intentId, limit: 100 }).autoPagingToArray({ limit: 1_000 }));
    for (const refund of refunds) if (refund.status === 'succeeded') total += refund.amount;
    return total;
  }

  async function* recent(since: number): AsyncIterable<Stripe.PaymentIntent> {
    let startingAfter: string | undefined;
    for (let page = 0; page < SCAN_PAGES; page += 1) {
      const listed = await calling(() => stripe.paymentIntents.list({ limit: 100, ...(startingAfter ? { starting_after: startingAfter } : {}) }));
      for (const intent of listed.data) if (intent.created >= since) yield intent;
      // Stripe lists newest first: a page that reaches back past `since` is the last one needed.
      if (!listed.has_more || listed.data.length === 0 || listed.data.every((intent) => intent.created < since)) return;
      startingAfter = listed.data.at(-1)!.id;
    }
  }

  const provider: PaymentProvider = {
    name: 'stripe',

    async createCustomer({ name, email, metadata }) {
      const customer = await calling(() => stripe.customers.create({ name, ...(email ? { email } : {}), metadata }));
      return { id: customer.id };
    },

    async customerExists(providerCustomerId) {
      const customer = await calling(() => stripe.customers.retrieve(providerCustomerId));
      if ((customer as Stripe.DeletedCustomer).deleted) throw new GatewayRefusal(`Stripe customer ${providerCustomerId} is deleted`, 'resource_missing');
    },

    async defaultPaymentMethod(providerCustomerId) {
      const customer = await calling(() => stripe.customers.retrieve(providerCustomerId));
      if ((customer as Stripe.DeletedCustomer).deleted) return null;
      const chosen = (customer as Stripe.Customer).invoice_settings?.default_payment_method;
      const method = chosen
        ? typeof chosen === 'string'
          ? await calling(() => stripe.paymentMethods.retrieve(chosen))
          : chosen
        : (await calling(() => stripe.paymentMethods.list({ customer: providerCustomerId, type: 'card', limit: 1 }))).data[0];
      if (!method) return null;
      return { id: method.id, brand: method.card?.brand ?? null, last4: method.card?.last4 ?? null };
    },

    async charge(request: ChargeRequest) {
      assertCountedAlike(request.currency);
      const method = await provider.defaultPaymentMethod(request.providerCustomerId);
      if (!method) throw new GatewayRefusal('the customer has no payment method at Stripe', 'no_payment_method');
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: request.amountMinor,
            currency: request.currency.toLowerCase(),
            customer: request.providerCustomerId,
            payment_method: method.id,
            confirm: true,
            off_session: true,
            metadata: { ...request.metadata, description: request.description },
          },
          { idempotencyKey: request.idempotencyKey },
        );
        return toPayment(intent);
      } catch (error) {
        // A decline answers 402 instead of the payment; the payment exists all the same, with its error.
        if (error instanceof Stripe.errors.StripeError && error.statusCode === 402) {
          const raw = (error.raw ?? {}) as { payment_intent?: Stripe.PaymentIntent };
          if (raw.payment_intent?.id) return toPayment(raw.payment_intent);
          const found = await provider.findPayment(request.metadata, Math.floor(Date.now() / 1000) - 3600);
          if (found) return found.status === 'failed' ? found : { ...found, status: 'failed', failure: found.failure ?? { code: error.code ?? 'card_declined', message: error.message } };
        }
        throw translated(error);
      }
    },

    async findPayment(match, since) {
      const keys = Object.entries(match);
      for await (const intent of recent(since)) {
        if (keys.every(([key, value]) => intent.metadata?.[key] === value)) return toPayment(intent, await refundedOf(intent.id));
      }
      return null;
    },

    async retrievePayment(id) {
      const intent = await calling(() => stripe.paymentIntents.retrieve(id));
      return toPayment(intent, intent.status === 'succeeded' ? await calling(() => refundedOf(id)) : 0);
    },

    async *listPayments(since) {
      for await (const intent of recent(since)) yield toPayment(intent);
    },

    async refund({ paymentId, amountMinor, idempotencyKey, metadata }): Promise<GatewayRefund> {
      return toRefund(await calling(() => stripe.refunds.create({ payment_intent: paymentId, amount: amountMinor, metadata }, { idempotencyKey })));
    },

    async findRefund(paymentId, match) {
      const keys = Object.entries(match);
      const refunds = await calling(() => stripe.refunds.list({ payment_intent: paymentId, limit: 100 }).autoPagingToArray({ limit: 1_000 }));
      const found = refunds.find((refund) => keys.every(([key, value]) => refund.metadata?.[key] === value));
      return found ? toRefund(found) : null;
    },

    async retrieveRefund(id) {
      return toRefund(await calling(() => stripe.refunds.retrieve(id)));
    },

    verifyWebhook(rawBody, signature, webhookSecret): GatewayEvent {
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret);
      } catch (error) {
        throw new GatewayRefusal(`the webhook's signature does not match: ${(error as Error).message}`, 'signature');
      }
      // Signed is not well formed: an event is read no further than the fields it must have.
      const shaped = event as unknown as { id?: unknown; type?: unknown; data?: { object?: unknown } };
      if (typeof shaped.id !== 'string' || typeof shaped.type !== 'string' || typeof shaped.data?.object !== 'object' || shaped.data.object === null) {
        throw new GatewayRefusal('the webhook is not a Stripe event: it needs an id, a type and data.object', 'malformed_event');
      }
      const object = shaped.data.object as { object?: unknown; id?: unknown; payment_intent?: unknown };
      const idOf = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string' ? (value as { id: string }).id : null);
      if (object.object === 'payment_intent') return { id: shaped.id, type: shaped.type, paymentId: idOf(object.id) };
      if (object.object === 'charge') return { id: shaped.id, type: shaped.type, paymentId: idOf(object.payment_intent) };
      return { id: shaped.id, type: shaped.type, paymentId: null };
    },
  };
  return provider;
}
