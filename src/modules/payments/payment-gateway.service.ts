import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { customersIn } from '../customers';
import { invoicesIn } from '../invoices';
import { toPaymentAttempt, type CollectionService, type PaymentAttempt } from './collection.service';
import { gatewayAccounts, type GatewayDeps } from './gateway-accounts';
import { createGatewayRepository, DUNNING_ONE_PER_SCOPE, unbookedOf, type AttemptRow, type CollectOn, type DunningCampaignRow, type ProviderAccountRow, type ReconciliationRow } from './gateway.repository';
import { GatewayRefusal, GatewayUnavailable, type PaymentMethodSummary } from './providers/provider';
import { isUniqueViolation } from '../../db/knex';
import { Decimal, formatAmount, fromMinorUnits } from '../../domain/money';

export interface ProviderAccount {
  provider: 'stripe';
  /** The secret key's last four characters: enough to tell keys apart, never the key. */
  secretKeyLast4: string;
  webhookSecretSet: true;
  collectOn: CollectOn;
  createdAt: string;
  updatedAt: string;
}

export interface CustomerPaymentProvider {
  customerId: string;
  provider: 'stripe';
  providerCustomerId: string;
  defaultPaymentMethod: PaymentMethodSummary | null;
  createdAt: string;
  updatedAt: string;
}

export interface DunningCampaign {
  id: string;
  customerId: string | null;
  name: string;
  maxAttempts: number;
  daysBetweenAttempts: number;
  minimumAmountDue: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export interface ReconciliationDifference {
  kind: 'missing_here' | 'missing_at_gateway' | 'status_differs' | 'amount_differs' | 'unrecorded_payment' | 'refund_unbooked';
  providerPaymentId: string | null;
  attemptId: string | null;
  invoiceId: string | null;
  gateway: { status: string; amount: string; currency: string } | null;
  ours: { status: string; amount: string; currency: string } | null;
}

export interface Reconciliation {
  provider: 'stripe';
  days: number;
  checkedAt: string;
  differences: ReconciliationDifference[];
}

function toReconciliation(row: ReconciliationRow): Reconciliation {
  return { provider: 'stripe', days: row.days, checkedAt: row.checked_at.toISOString(), differences: row.differences as ReconciliationDifference[] };
}

function toAccount(row: ProviderAccountRow): ProviderAccount {
  return { provider: row.provider, secretKeyLast4: row.secret_key_last4, webhookSecretSet: true, collectOn: row.collect_on, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() };
}

function toCampaign(row: DunningCampaignRow): DunningCampaign {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    maxAttempts: row.max_attempts,
    daysBetweenAttempts: row.days_between_attempts,
    // Each amount with its currency's minor-unit digits, as every amount is shown ("5.00", not "5").
    minimumAmountDue: Object.fromEntries(Object.entries(row.minimum_amount_due).map(([currency, amount]) => [currency, formatAmount(amount, currency)])),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A per-currency map without its absent entries. */
function definedOnly(map: Partial<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

function campaignConflict(error: unknown): never {
  if (isUniqueViolation(error, DUNNING_ONE_PER_SCOPE)) throw AppError.conflict('a dunning campaign already exists for this scope (the organisation, or this customer): change that one');
  throw error;
}

/** A gateway answer the caller can act on: a refused request is the caller's to fix (409), the rest a dependency down (503). */
/** A gateway's refusal is a 409, its silence a 503; anything else is ours, for the error handler to judge. */
function gatewayFailure(error: unknown): never {
  if (error instanceof GatewayRefusal) throw AppError.conflict(`the payment provider refused: ${error.message}`);
  if (error instanceof GatewayUnavailable) throw AppError.unavailable(`the payment provider did not answer: ${error.message}`);
  throw error;
}

export interface PaymentGatewayDeps extends GatewayDeps {
  collection: CollectionService;
  /** Starts the invoice's collection workflow, or tells the running one to look again. */
  nudgeCollection?: (organisationId: string, invoiceId: string) => Promise<void>;
  /** Makes the organisation's daily reconciliation Schedule, if it has none. */
  scheduleReconciliation?: (organisationId: string) => Promise<void>;
}

/**
 * The organisation's side of a payment gateway: its credentials, its customers' accounts there, its
 * dunning campaigns, the gateway's webhooks and the comparison of the gateway's payments with ours.
 */
export function createPaymentGatewayService(deps: PaymentGatewayDeps) {
  const { db } = deps;
  const repository = createGatewayRepository(db);
  const accounts = gatewayAccounts(deps);

  async function linkView(organisationId: string, customerId: string): Promise<CustomerPaymentProvider> {
    const link = await repository.findLink(organisationId, customerId);
    if (!link) throw AppError.notFound('Payment provider of the customer');
    const { provider } = await accounts.connected(organisationId, link.provider);
    const method = await provider.defaultPaymentMethod(link.provider_customer_id).catch(gatewayFailure);
    return {
      customerId,
      provider: link.provider,
      providerCustomerId: link.provider_customer_id,
      defaultPaymentMethod: method ? { brand: method.brand, last4: method.last4 } : null,
      createdAt: link.created_at.toISOString(),
      updatedAt: link.updated_at.toISOString(),
    };
  }

  return {
    async saveStripeAccount(organisationId: string, input: { secretKey: string; webhookSecret: string; collectOn?: CollectOn | undefined }): Promise<ProviderAccount> {
      const saved = await repository.saveAccount({
        organisation_id: organisationId,
        provider: 'stripe',
        secret_key: deps.secrets.seal(input.secretKey),
        webhook_secret: deps.secrets.seal(input.webhookSecret),
        secret_key_last4: input.secretKey.slice(-4),
        collect_on: input.collectOn ?? 'raised',
      });
      await deps.scheduleReconciliation?.(organisationId);
      return toAccount(saved);
    },

    async stripeAccount(organisationId: string): Promise<ProviderAccount> {
      return toAccount(orNotFound(await repository.findAccount(organisationId, 'stripe'), 'Payment provider'));
    },

    /**
     * Links the customer to its account at the gateway: the one named (checked there), else one created
     * there for it. Linking again replaces the link.
     */
    async linkCustomer(organisationId: string, customerId: string, input: { provider: 'stripe'; providerCustomerId?: string | undefined }): Promise<{ link: CustomerPaymentProvider; created: boolean }> {
      const customer = await customersIn(db).findById(organisationId, customerId);
      if (!customer) throw AppError.notFound('Customer');
      const { provider } = await accounts.connected(organisationId, input.provider);
      const existing = await repository.findLink(organisationId, customerId);
      let providerCustomerId = input.providerCustomerId;
      if (providerCustomerId) {
        await provider.customerExists(providerCustomerId).catch((error: unknown) => {
          if (error instanceof GatewayRefusal && error.code === 'resource_missing') throw AppError.validation(`Stripe has no customer ${providerCustomerId}`, 'body.providerCustomerId');
          gatewayFailure(error);
        });
      } else if (existing) {
        providerCustomerId = existing.provider_customer_id;
      } else {
        providerCustomerId = (await provider.createCustomer({ name: customer.name, email: customer.email, metadata: { organisation_id: organisationId, customer_id: customerId } }).catch(gatewayFailure)).id;
      }
      try {
        await repository.saveLink({ customer_id: customerId, organisation_id: organisationId, provider: input.provider, provider_customer_id: providerCustomerId });
      } catch (error) {
        if (isUniqueViolation(error, 'customer_payment_providers_gateway_customer')) throw AppError.conflict(`Stripe customer ${providerCustomerId} is already linked to another customer`);
        throw error;
      }
      return { link: await linkView(organisationId, customerId), created: !existing };
    },

    customerLink: linkView,

    async attempts(organisationId: string, invoiceId: string, paging: PageQuery): Promise<Page<PaymentAttempt>> {
      orNotFound(await invoicesIn(db).findRow(organisationId, invoiceId), 'Invoice');
      const page = await repository.listAttempts(organisationId, invoiceId, paging);
      return { ...page, items: page.items.map(toPaymentAttempt) };
    },

    /**
     * A webhook of the organisation's Stripe account: verified with its webhook secret (400 if it does not
     * match, nothing recorded), then handled once per event id. A payment's events record its attempt's
     * state and hand the invoice to its collection workflow, which records the payment or goes on dunning;
     * a refund's event reads the payment's refunds back.
     */
    async receiveStripeWebhook(organisationId: string, rawBody: Buffer | undefined, signature: string | undefined): Promise<{ received: true; duplicate: boolean }> {
      const account = await repository.findAccount(organisationId, 'stripe');
      if (!account) throw AppError.notFound('Payment provider');
      if (!rawBody || !signature) throw AppError.validation('a Stripe webhook needs its raw JSON body and its Stripe-Signature header', 'headers.stripe-signature');
      const provider = accounts.providerFor(account);
      let event;
      try {
        event = provider.verifyWebhook(rawBody, signature, deps.secrets.open(account.webhook_secret));
      } catch (error) {
        if (error instanceof GatewayRefusal) throw AppError.validation(error.message, error.code === 'malformed_event' ? 'body' : 'headers.stripe-signature');
        throw error;
      }
      // An event handled once is not handled again; one whose handling failed was never marked, so the
      // gateway's redelivery (or a resend from its dashboard) is handled. Handling is safe to repeat, so
      // two deliveries racing both handle it, and the second is told it was a duplicate.
      if (await repository.eventSeen(organisationId, 'stripe', event.id)) return { received: true, duplicate: true };
      try {
        const { paymentId } = event;
        if (paymentId && (event.type.startsWith('payment_intent.') || event.type === 'charge.refunded')) {
          // The gateway's current view, not the event's: events may arrive out of order.
          const payment = await provider.retrievePayment(paymentId);
          const attempt = await deps.collection.record(organisationId, payment);
          // What the gateway refunded beyond what the attempt records (refunds made at the gateway's dashboard too).
          const refunded = fromMinorUnits(payment.refundedMinor, payment.currency);
          if (attempt && new Decimal(refunded).greaterThan(attempt.refunded_amount)) await repository.setRefunded(attempt.id, refunded, payment.refundedMinor >= payment.amountMinor);
          if (attempt) await deps.nudgeCollection?.(organisationId, attempt.invoice_id);
        }
      } catch (error) {
        if (error instanceof AppError) throw error;
        // A payment the account does not have (a test event, another account's) has nothing to record here:
        // refused, the gateway would deliver the event again for days.
        if (!(error instanceof GatewayRefusal && error.code === 'resource_missing')) gatewayFailure(error);
      }
      return { received: true, duplicate: !(await repository.claimEvent(organisationId, 'stripe', event.id, event.type)) };
    },

    /**
     * The gateway's payments of the last `days` against our attempts: payments we have no attempt for,
     * attempts whose payment the gateway does not list, and those whose state or amount differ.
     */
    /** Compares now and stores the report, which replaces the previous one. */
    async runReconciliation(organisationId: string, days: number): Promise<Reconciliation> {
      const differences = await this.reconcile(organisationId, days);
      return toReconciliation(await repository.saveReconciliation(organisationId, 'stripe', days, differences));
    },

    /** The latest report (the daily Schedule's, or the last one asked for); a fresh one when asked or when there is none. */
    async reconciliation(organisationId: string, options: { days: number; refresh: boolean }): Promise<Reconciliation> {
      const stored = options.refresh ? undefined : await repository.findReconciliation(organisationId, 'stripe');
      return stored ? toReconciliation(stored) : this.runReconciliation(organisationId, options.days);
    },

    async reconcile(organisationId: string, days: number): Promise<ReconciliationDifference[]> {
      const { provider } = await accounts.connected(organisationId);
      const since = new Date(Date.now() - days * 86_400_000);
      const ours = new Map((await repository.attemptsSince(organisationId, 'stripe', new Date(since.getTime() - 86_400_000))).map((attempt) => [attempt.provider_payment_id!, attempt]));
      const differences: ReconciliationDifference[] = [];
      const seen = new Set<string>();
      // Money the gateway paid back by its own means (its dashboard) that no credit note books: `gateway`
      // is what it refunded so, `ours` the attempt. What it refunded is what its webhooks told the attempt,
      // or what it answers now where the payment was read by its id (its list does not tell refunds).
      const asked = await repository.refundsAsked([...ours.values()].map((attempt) => attempt.id));
      const pushUnbooked = (payment: { id: string; refundedMinor: number; currency: string }, attempt: AttemptRow, mine: ReconciliationDifference['ours']) => {
        const refunded = Decimal.max(attempt.refunded_amount, fromMinorUnits(payment.refundedMinor, payment.currency)).toFixed();
        const unbooked = unbookedOf(refunded, asked.get(attempt.id));
        if (new Decimal(unbooked).greaterThan(0)) {
          differences.push({ kind: 'refund_unbooked', providerPaymentId: payment.id, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway: { status: 'refunded', amount: formatAmount(unbooked, attempt.currency), currency: attempt.currency }, ours: mine });
        }
      };
      try {
        for await (const payment of provider.listPayments(Math.floor(since.getTime() / 1000))) {
          if (payment.metadata.organisation_id !== undefined && payment.metadata.organisation_id !== organisationId) continue;
          seen.add(payment.id);
          const gateway = { status: payment.status, amount: fromMinorUnits(payment.amountMinor, payment.currency), currency: payment.currency };
          const attempt = ours.get(payment.id);
          if (!attempt) {
            if (payment.status === 'succeeded') differences.push({ kind: 'missing_here', providerPaymentId: payment.id, attemptId: null, invoiceId: payment.metadata.invoice_id ?? null, gateway, ours: null });
            continue;
          }
          const mine = { status: attempt.status, amount: formatAmount(attempt.amount, attempt.currency), currency: attempt.currency };
          if (mine.amount !== gateway.amount) differences.push({ kind: 'amount_differs', providerPaymentId: payment.id, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway, ours: mine });
          else if (attempt.status !== payment.status && !(attempt.status === 'refunded' && payment.status === 'succeeded')) differences.push({ kind: 'status_differs', providerPaymentId: payment.id, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway, ours: mine });
          else if (attempt.status === 'succeeded' && !attempt.payment_id) differences.push({ kind: 'unrecorded_payment', providerPaymentId: payment.id, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway, ours: mine });
          else pushUnbooked(payment, attempt, mine);
        }
      } catch (error) {
        gatewayFailure(error);
      }
      // The scan reads the newest payments only: an attempt it did not meet is asked for by id.
      for (const [paymentId, attempt] of ours) {
        if (seen.has(paymentId) || attempt.created_at < since) continue;
        const mine = { status: attempt.status, amount: formatAmount(attempt.amount, attempt.currency), currency: attempt.currency };
        try {
          const payment = await provider.retrievePayment(paymentId);
          const gateway = { status: payment.status, amount: fromMinorUnits(payment.amountMinor, payment.currency), currency: payment.currency };
          if (gateway.amount !== mine.amount) differences.push({ kind: 'amount_differs', providerPaymentId: paymentId, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway, ours: mine });
          else if (attempt.status !== payment.status && !(attempt.status === 'refunded' && payment.status === 'succeeded')) differences.push({ kind: 'status_differs', providerPaymentId: paymentId, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway, ours: mine });
          else pushUnbooked(payment, attempt, mine);
        } catch (error) {
          if (!(error instanceof GatewayRefusal && error.code === 'resource_missing')) gatewayFailure(error);
          differences.push({ kind: 'missing_at_gateway', providerPaymentId: paymentId, attemptId: attempt.id, invoiceId: attempt.invoice_id, gateway: null, ours: mine });
        }
      }
      return differences;
    },

    async createCampaign(organisationId: string, input: { customerId?: string | undefined; name: string; maxAttempts: number; daysBetweenAttempts: number; minimumAmountDue?: Partial<Record<string, string>> | undefined }): Promise<DunningCampaign> {
      if (input.customerId && !(await customersIn(db).findById(organisationId, input.customerId))) throw AppError.notFound('Customer');
      const row = await repository
        .insertCampaign({
          organisation_id: organisationId,
          customer_id: input.customerId ?? null,
          name: input.name,
          max_attempts: input.maxAttempts,
          days_between_attempts: input.daysBetweenAttempts,
          minimum_amount_due: definedOnly(input.minimumAmountDue ?? {}),
        })
        .catch(campaignConflict);
      return toCampaign(row);
    },

    async campaign(organisationId: string, id: string): Promise<DunningCampaign> {
      return toCampaign(orNotFound(await repository.findCampaign(organisationId, id), 'Dunning campaign'));
    },

    async campaigns(organisationId: string, paging: PageQuery, customerId?: string): Promise<Page<DunningCampaign>> {
      const page = await repository.listCampaigns(organisationId, paging, customerId);
      return { ...page, items: page.items.map(toCampaign) };
    },

    async updateCampaign(organisationId: string, id: string, input: { name?: string | undefined; maxAttempts?: number | undefined; daysBetweenAttempts?: number | undefined; minimumAmountDue?: Partial<Record<string, string>> | undefined }): Promise<DunningCampaign> {
      const row = await repository.updateCampaign(organisationId, id, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.maxAttempts !== undefined ? { max_attempts: input.maxAttempts } : {}),
        ...(input.daysBetweenAttempts !== undefined ? { days_between_attempts: input.daysBetweenAttempts } : {}),
        ...(input.minimumAmountDue !== undefined ? { minimum_amount_due: definedOnly(input.minimumAmountDue) } : {}),
      });
      return toCampaign(orNotFound(row, 'Dunning campaign'));
    },

    async deleteCampaign(organisationId: string, id: string): Promise<void> {
      if (!(await repository.deleteCampaign(organisationId, id))) throw AppError.notFound('Dunning campaign');
    },
  };
}

export type PaymentGatewayService = ReturnType<typeof createPaymentGatewayService>;
