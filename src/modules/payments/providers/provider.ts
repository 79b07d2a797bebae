/**
 * The payment-provider port: what collection needs from a gateway, in our terms. Amounts cross it in the
 * currency's minor units (integers), currencies in ISO 4217 upper case. An adapter (./stripe.ts) turns
 * these calls into the gateway's and its answers and errors back into these shapes.
 */

/** A gateway payment's state, as a payment attempt records it. */
export type GatewayPaymentStatus = 'processing' | 'requires_action' | 'succeeded' | 'failed';

export interface GatewayPayment {
  id: string;
  status: GatewayPaymentStatus;
  amountMinor: number;
  currency: string;
  /** What the customer must do to complete it (`requires_action`): a link, when the gateway gives one. */
  actionUrl: string | null;
  failure: { code: string; message: string } | null;
  /** Minor units refunded so far. */
  refundedMinor: number;
  /** The gateway's customer it charged, when it names one. */
  customer: string | null;
  /** Ours, as sent with the charge: the organisation, invoice and attempt it pays. */
  metadata: Record<string, string>;
  /** Epoch seconds. */
  created: number;
}

export interface PaymentMethodSummary {
  brand: string | null;
  last4: string | null;
}

export interface ChargeRequest {
  providerCustomerId: string;
  amountMinor: number;
  currency: string;
  /** The gateway answers a repeat of the key with the first charge instead of charging again. */
  idempotencyKey: string;
  metadata: Record<string, string>;
  description: string;
}

export interface GatewayRefund {
  id: string;
  status: 'pending' | 'succeeded' | 'failed';
  amountMinor: number;
}

/** A webhook event, verified and reduced to what collection reacts to. */
export interface GatewayEvent {
  id: string;
  type: string;
  /**
   * The id of the payment it is about (a payment's events carry it, a refund's name it), else null. Only
   * the id: what the payment is now is read back from the gateway, since events arrive out of order.
   */
  paymentId: string | null;
}

/**
 * A gateway's answer that says the request itself is wrong (a bad key, a missing customer): repeating it
 * fails the same way. Anything else an adapter throws (timeouts, rate limits, 5xx) is worth retrying.
 */
export class GatewayRefusal extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'GatewayRefusal';
  }
}

/** The gateway did not answer, or answered that it could not serve the request now (timeouts, 429, 5xx): worth retrying. */
export class GatewayUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayUnavailable';
  }
}

export interface PaymentProvider {
  readonly name: 'stripe';
  createCustomer(input: { name: string; email: string | null; metadata: Record<string, string> }): Promise<{ id: string }>;
  /** Throws GatewayRefusal (code `resource_missing`) when the gateway has no such customer. */
  customerExists(providerCustomerId: string): Promise<void>;
  /** The default payment method, else the first card on file; null if none. */
  defaultPaymentMethod(providerCustomerId: string): Promise<(PaymentMethodSummary & { id: string }) | null>;
  /**
   * Charges off-session. A decline is not thrown: it comes back as a `failed` payment (looked up when the
   * gateway answered with an error instead of the payment).
   */
  charge(request: ChargeRequest): Promise<GatewayPayment>;
  /** A charge made with these metadata values, created at or after `since` (epoch seconds); null if none. */
  findPayment(match: Record<string, string>, since: number): Promise<GatewayPayment | null>;
  retrievePayment(id: string): Promise<GatewayPayment>;
  /** Payments created at or after `since` (epoch seconds), newest first. */
  listPayments(since: number): AsyncIterable<GatewayPayment>;
  refund(input: { paymentId: string; amountMinor: number; idempotencyKey: string; metadata: Record<string, string> }): Promise<GatewayRefund>;
  /** A refund of the payment made with these metadata values; null if none. */
  findRefund(paymentId: string, match: Record<string, string>): Promise<GatewayRefund | null>;
  retrieveRefund(id: string): Promise<GatewayRefund>;
  /** Throws GatewayRefusal (code `signature`) when the signature does not match the secret. */
  verifyWebhook(rawBody: Buffer, signature: string, webhookSecret: string): GatewayEvent;
}
