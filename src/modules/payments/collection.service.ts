import type { Knex } from 'knex';
import { domainEvent } from '../../domain/events';
import { AppError } from '../../domain/errors';
import { Decimal, formatAmount, fromMinorUnits, toMinorUnits } from '../../domain/money';
import { recordEvent } from '../../events/outbox';
import { invoicesIn } from '../invoices';
import { creditNotesIn } from '../credit-notes';
import { gatewayAccounts, type GatewayDeps } from './gateway-accounts';
import { createGatewayRepository, FINAL_STATUSES, type AttemptRow, type AttemptStatus, type GatewayRepository } from './gateway.repository';
import { stillOwed } from './still-owed';

export type { CollectionStep };
import { GatewayRefusal, type GatewayPayment } from './providers/provider';
import type { CollectionStep } from '../../../workflows/invoice-collection.types';
import type { RefundRequest, RefundStatus } from '../../../workflows/gateway-refund.types';

/** A payment attempt as the API shows it. */
export interface PaymentAttempt {
  id: string;
  invoiceId: string;
  customerId: string;
  attempt: number;
  provider: string;
  amount: string;
  currency: string;
  status: AttemptStatus;
  providerPaymentId: string | null;
  actionUrl: string | null;
  failure: { code: string; message: string } | null;
  paymentId: string | null;
  refundedAmount: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export function toPaymentAttempt(row: AttemptRow): PaymentAttempt {
  return {
    id: row.id,
    invoiceId: row.invoice_id,
    customerId: row.customer_id,
    attempt: row.attempt,
    provider: row.provider,
    amount: formatAmount(row.amount, row.currency),
    currency: row.currency,
    status: row.status,
    providerPaymentId: row.provider_payment_id,
    actionUrl: row.action_url,
    failure: row.failure_code ? { code: row.failure_code, message: row.failure_message ?? '' } : null,
    paymentId: row.payment_id,
    refundedAmount: formatAmount(row.refunded_amount, row.currency),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
  };
}

/** The metadata every charge carries: a retried step finds the charge at the gateway by `attempt_id`. */
function chargeMetadata(attempt: AttemptRow): Record<string, string> {
  return { organisation_id: attempt.organisation_id, invoice_id: attempt.invoice_id, attempt: String(attempt.attempt), attempt_id: attempt.id };
}

/** The Stripe idempotency key of an attempt's charge. */
export const chargeIdempotencyKey = (attempt: Pick<AttemptRow, 'invoice_id' | 'attempt'>) => `invoice:${attempt.invoice_id}:attempt:${attempt.attempt}`;

/** How far before an attempt's creation a lookup of its charge at the gateway reaches (clocks differ). */
const LOOKUP_MARGIN_SECONDS = 600;

export function createCollectionService(deps: GatewayDeps) {
  const { db } = deps;
  const accounts = gatewayAccounts(deps);
  const attempts = createGatewayRepository(db);

  /**
   * Records what the gateway says of a payment on its attempt, in one transaction with the attempt locked:
   * a state that moves on (a failure announces `payment.failed`), never back from a final one but from
   * failed to succeeded (the gateway took the money after all). A payment whose attempt we never recorded
   * but whose metadata names one of our invoices is recorded as that invoice's next attempt.
   */
  async function record(organisationId: string, payment: GatewayPayment): Promise<AttemptRow | undefined> {
    return db.transaction((trx) => recordIn(trx, organisationId, payment));
  }

  /** `record`, inside the caller's transaction. */
  async function recordIn(trx: Knex, organisationId: string, payment: GatewayPayment): Promise<AttemptRow | undefined> {
    const repository = createGatewayRepository(trx);
    const attempt =
      (await repository.findAttemptOfGatewayPayment(organisationId, 'stripe', payment.id, true)) ??
      (payment.metadata.attempt_id ? await repository.findAttempt(organisationId, payment.metadata.attempt_id, true) : undefined) ??
      (await rebuilt(trx, repository, organisationId, payment));
    if (!attempt) return undefined;
    const moves = !FINAL_STATUSES.includes(attempt.status) || (attempt.status === 'failed' && payment.status === 'succeeded');
    if (!moves || (attempt.status === payment.status && attempt.provider_payment_id === payment.id)) return attempt;
    const updated = await repository.recordOutcome(attempt.id, {
      status: payment.status,
      providerPaymentId: payment.id,
      actionUrl: payment.actionUrl,
      failureCode: payment.failure?.code ?? null,
      failureMessage: payment.failure?.message ?? null,
    });
    if (payment.status === 'failed') await recordEvent(trx, organisationId, domainEvent('payment.failed', toPaymentAttempt(updated)));
    return updated;
  }

  /**
   * The attempt of a payment taken at the gateway for one of our invoices without a record here: only a
   * payment that could be the invoice's own, from the customer's account at the gateway, in the invoice's
   * currency and for exactly what it still owes. Any other is left for reconciliation to show
   * (`missing_here`) and for an operator to record by hand; it never marks the invoice paid.
   */
  async function rebuilt(trx: Knex, repository: GatewayRepository, organisationId: string, payment: GatewayPayment): Promise<AttemptRow | undefined> {
    if (payment.metadata.organisation_id !== organisationId || !payment.metadata.invoice_id) return undefined;
    const invoice = await invoicesIn(trx).lock(organisationId, payment.metadata.invoice_id);
    if (!invoice?.customer_id) return undefined;
    // A delivery racing this one recorded it while this one waited for the invoice.
    const recorded = await repository.findAttemptOfGatewayPayment(organisationId, 'stripe', payment.id, true);
    if (recorded) return recorded;
    const link = await repository.findLink(organisationId, invoice.customer_id);
    if (!link || payment.customer !== link.provider_customer_id || payment.currency !== invoice.currency) return undefined;
    const owed = await stillOwed(trx, invoice);
    if (owed === null || !new Decimal(fromMinorUnits(payment.amountMinor, payment.currency)).equals(owed)) return undefined;
    const latest = await repository.latestAttempt(invoice.id, true);
    return repository.insertAttempt({
      organisation_id: organisationId,
      invoice_id: invoice.id,
      customer_id: invoice.customer_id,
      attempt: (latest?.attempt ?? 0) + 1,
      provider: 'stripe',
      amount: fromMinorUnits(payment.amountMinor, payment.currency),
      currency: payment.currency,
      status: 'processing',
      provider_payment_id: payment.id,
    });
  }

  /** Ends a pending attempt that was never charged because nothing is owed any more: a failure nobody is told of. */
  async function closeAttempt(attempt: AttemptRow, code: string, message: string): Promise<AttemptStatus> {
    return db.transaction(async (trx) => {
      const repository = createGatewayRepository(trx);
      const locked = (await repository.findAttempt(attempt.organisation_id, attempt.id, true))!;
      if (locked.status !== 'pending') return locked.status;
      return (await repository.recordOutcome(attempt.id, { status: 'failed', failureCode: code, failureMessage: message })).status;
    });
  }

  async function failAttempt(attempt: AttemptRow, code: string, message: string): Promise<AttemptStatus> {
    return db.transaction(async (trx) => {
      const repository = createGatewayRepository(trx);
      const locked = (await repository.findAttempt(attempt.organisation_id, attempt.id, true))!;
      if (locked.status !== 'pending') return locked.status;
      const updated = await repository.recordOutcome(attempt.id, { status: 'failed', failureCode: code, failureMessage: message });
      await recordEvent(trx, attempt.organisation_id, domainEvent('payment.failed', toPaymentAttempt(updated)));
      return updated.status;
    });
  }

  return {
    record,

    /** `retryAfterAttempt`: the failed attempt whose dunning wait the workflow has just sat out. */
    async nextStep(input: { organisationId: string; invoiceId: string; retryAfterAttempt?: number }): Promise<CollectionStep> {
      const { organisationId, invoiceId } = input;
      return db.transaction(async (trx) => {
        const repository = createGatewayRepository(trx);
        const invoice = await invoicesIn(trx).lock(organisationId, invoiceId);
        if (!invoice?.customer_id) return { next: 'done', reason: 'the invoice has no customer' };
        const latest = await repository.latestAttempt(invoiceId, true);
        // Any attempt the gateway says succeeded and that pays nothing yet, an older one included (a failure
        // that the gateway later settled): its money is recorded before anything else is charged.
        const unsettled = await repository.unsettledSuccess(invoiceId);
        if (unsettled) {
          return invoice.status === 'raised' || invoice.status === 'sent' ? { next: 'settle', attemptId: unsettled.id } : { next: 'done', reason: `the gateway's payment ${unsettled.provider_payment_id} came after the invoice was ${invoice.status}: see reconciliation` };
        }
        if (await repository.anyCollected(invoiceId)) return { next: 'done', reason: 'the gateway collected the invoice' };
        if (latest?.status === 'pending') return { next: 'charge', attemptId: latest.id };
        if (latest?.status === 'processing' || latest?.status === 'requires_action') return { next: 'await-gateway', attemptId: latest.id };
        // Paid by other means, cancelled or back to a draft: nothing more to collect.
        const due = await stillOwed(trx, invoice);
        if (due === null || invoice.status === 'paid') return { next: 'done', reason: `the invoice is ${invoice.status}` };
        if (new Decimal(due).lessThanOrEqualTo(0)) return { next: 'done', reason: 'nothing is owed' };
        if (!(await repository.findLink(organisationId, invoice.customer_id))) return { next: 'done', reason: 'the customer has no payment provider' };
        if (!(await repository.findAccount(organisationId, 'stripe'))) return { next: 'done', reason: 'the organisation has no payment provider' };
        // The gateway does not take the invoice's currency: no retry will change that.
        if (latest?.status === 'failed' && latest.failure_code === 'currency_unsupported') return { next: 'done', reason: `the gateway does not collect ${invoice.currency}` };
        if (latest) {
          // A failure: tried again as the customer's dunning campaign, else the organisation's, says.
          const campaign = await repository.campaignFor(organisationId, invoice.customer_id);
          if (!campaign) return { next: 'done', reason: 'no dunning campaign tries a failed payment again' };
          if (latest.attempt >= campaign.max_attempts) return { next: 'done', reason: `the dunning campaign's ${campaign.max_attempts} attempts are spent` };
          const minimum = campaign.minimum_amount_due[invoice.currency];
          if (minimum !== undefined && new Decimal(due).lessThan(minimum)) return { next: 'done', reason: `${due} ${invoice.currency} is below the campaign's minimum of ${minimum}` };
          if (input.retryAfterAttempt !== latest.attempt) return { next: 'wait', afterAttempt: latest.attempt, days: campaign.days_between_attempts };
        }
        const created = await repository.insertAttempt({
          organisation_id: organisationId,
          invoice_id: invoiceId,
          customer_id: invoice.customer_id,
          attempt: (latest?.attempt ?? 0) + 1,
          provider: 'stripe',
          amount: due,
          currency: invoice.currency,
        });
        return { next: 'charge', attemptId: created.id };
      });
    },

    /**
     * Charges a pending attempt once: a charge the gateway already holds for the attempt (an earlier try
     * that died before recording it) is found by its metadata and recorded instead; the idempotency key
     * guards the moment in between. A refusal of the request (no payment method, bad credentials) fails
     * the attempt; anything else is thrown, for the workflow's bounded retries.
     */
    async charge(input: { organisationId: string; attemptId: string }): Promise<AttemptStatus> {
      const attempt = await attempts.findAttempt(input.organisationId, input.attemptId);
      if (!attempt) throw AppError.notFound('Payment attempt');
      if (attempt.status !== 'pending') return attempt.status;
      const link = await attempts.findLink(attempt.organisation_id, attempt.customer_id);
      if (!link) return failAttempt(attempt, 'no_payment_provider', 'the customer has no payment provider');
      const account = await attempts.findAccount(attempt.organisation_id, link.provider);
      if (!account) return failAttempt(attempt, 'no_payment_provider', 'the organisation has no payment provider');
      const provider = accounts.providerFor(account);
      const metadata = chargeMetadata(attempt);
      try {
        const found = await provider.findPayment({ attempt_id: attempt.id }, Math.floor(attempt.created_at.getTime() / 1000) - LOOKUP_MARGIN_SECONDS);
        if (found) return (await record(attempt.organisation_id, found))?.status ?? 'pending';
        // Not charged yet: only while the invoice still owes at least the attempt's amount (it may have been
        // paid by other means or cancelled while a charge waited for the gateway). The invoice stays locked
        // until the gateway's answer is recorded, so that a mark-paid by hand waits for it, then finds the
        // gateway collecting (409), and never records a second payment beside the charge.
        const payment = await db.transaction(async (trx): Promise<{ closed: string } | { recorded: AttemptRow | undefined }> => {
          const invoice = await invoicesIn(trx).lock(attempt.organisation_id, attempt.invoice_id);
          const due = invoice ? await stillOwed(trx, invoice) : null;
          if (!invoice || invoice.status === 'paid' || due === null || new Decimal(due).lessThan(attempt.amount)) {
            const owes = invoice?.status === 'paid' || due === null || !new Decimal(due).greaterThan(0) ? 'nothing' : formatAmount(due, attempt.currency);
            return { closed: `the invoice is ${invoice?.status ?? 'gone'} and owes ${owes}: the attempt was not charged` };
          }
          const charged = await provider.charge({
            providerCustomerId: link.provider_customer_id,
            amountMinor: toMinorUnits(attempt.amount, attempt.currency),
            currency: attempt.currency,
            idempotencyKey: chargeIdempotencyKey(attempt),
            metadata,
            description: `Invoice ${attempt.invoice_id}, attempt ${attempt.attempt}`,
          });
          return { recorded: await recordIn(trx, attempt.organisation_id, charged) };
        });
        if ('closed' in payment) return closeAttempt(attempt, 'invoice_not_owed', payment.closed);
        return payment.recorded?.status ?? 'pending';
      } catch (error) {
        if (error instanceof GatewayRefusal) return failAttempt(attempt, error.code, error.message);
        throw error;
      }
    },

    /** Reads an attempt in flight back from the gateway, for when no webhook has told its end. */
    async refresh(input: { organisationId: string; attemptId: string }): Promise<AttemptStatus> {
      const attempt = await attempts.findAttempt(input.organisationId, input.attemptId);
      if (!attempt) throw AppError.notFound('Payment attempt');
      if (FINAL_STATUSES.includes(attempt.status) || !attempt.provider_payment_id) return attempt.status;
      const { provider } = await accounts.connected(attempt.organisation_id);
      return (await record(attempt.organisation_id, await provider.retrievePayment(attempt.provider_payment_id)))?.status ?? attempt.status;
    },

    /**
     * Pays a credit note's refund back through the gateway that collected the invoice: recorded once per
     * credit note, then asked of the gateway under the key `credit-note:{id}:refund`; a retry first looks
     * the refund up at the gateway by the credit note in its metadata. Never more than the gateway took
     * and has not refunded yet: a refund beyond that fails, and says so. `none`: no gateway collected it.
     */
    async refund(input: RefundRequest): Promise<RefundStatus> {
      const attempt = await attempts.collectedAttemptOfInvoice(input.invoiceId);
      if (!attempt || attempt.organisation_id !== input.organisationId || !attempt.provider_payment_id) return 'none';
      // Claimed with the credit note locked: a void waits for the claim, then sees it and is refused. The
      // attempt is locked too, so that two notes never book the same refund made at the gateway's dashboard.
      const refund = await db.transaction(async (trx) => {
        const note = await creditNotesIn(trx).lock(input.organisationId, input.creditNoteId);
        const gateway = createGatewayRepository(trx);
        const claimed = await gateway.findRefundOfCreditNote(input.creditNoteId);
        if (claimed) return claimed;
        if (!note || note.status !== 'issued' || note.settlement !== 'refund') return undefined;
        const locked = (await gateway.lockAttempt(attempt.id))!;
        // Money the gateway already paid back by its own means: the note books it, and nothing is asked.
        const booked = new Decimal(input.amount).lessThanOrEqualTo(await gateway.unbookedRefund(locked));
        return gateway.claimRefund({ organisation_id: input.organisationId, credit_note_id: input.creditNoteId, attempt_id: attempt.id, amount: input.amount, currency: input.currency, ...(booked ? { status: 'succeeded' as const } : {}) });
      });
      if (!refund) return 'none';
      if (refund.status !== 'pending') return refund.status;
      const account = await attempts.findAccount(input.organisationId, attempt.provider);
      if (!account) {
        await attempts.recordRefund(refund.id, { status: 'failed', failure_message: 'the organisation has no payment provider' });
        return 'failed';
      }
      const provider = accounts.providerFor(account);
      const metadata = { organisation_id: input.organisationId, credit_note_id: input.creditNoteId, invoice_id: input.invoiceId };
      let made = refund.provider_refund_id ? await provider.retrieveRefund(refund.provider_refund_id) : await provider.findRefund(attempt.provider_payment_id, { credit_note_id: input.creditNoteId });
      if (!made) {
        const payment = await provider.retrievePayment(attempt.provider_payment_id);
        const amountMinor = toMinorUnits(refund.amount, refund.currency);
        if (amountMinor > payment.amountMinor - payment.refundedMinor) {
          const message = `the gateway holds ${fromMinorUnits(payment.amountMinor - payment.refundedMinor, payment.currency)} ${payment.currency} of this payment, less than this refund of ${formatAmount(refund.amount, refund.currency)}`;
          await attempts.recordRefund(refund.id, { status: 'failed', failure_message: message });
          return 'failed';
        }
        try {
          made = await provider.refund({ paymentId: attempt.provider_payment_id, amountMinor, idempotencyKey: `credit-note:${input.creditNoteId}:refund`, metadata });
        } catch (error) {
          if (!(error instanceof GatewayRefusal)) throw error;
          await attempts.recordRefund(refund.id, { status: 'failed', failure_message: error.message });
          return 'failed';
        }
      }
      await attempts.recordRefund(refund.id, { status: made.status, provider_refund_id: made.id });
      const payment = await provider.retrievePayment(attempt.provider_payment_id);
      await attempts.setRefunded(attempt.id, fromMinorUnits(payment.refundedMinor, payment.currency), payment.refundedMinor >= payment.amountMinor);
      return made.status;
    },

    /** What the invoice's `markPaid` needs to record a succeeded attempt's payment. */
    async settlement(input: { organisationId: string; attemptId: string }): Promise<{ invoiceId: string; paidAt: string; recorded: boolean }> {
      const attempt = await attempts.findAttempt(input.organisationId, input.attemptId);
      if (!attempt) throw AppError.notFound('Payment attempt');
      return { invoiceId: attempt.invoice_id, paidAt: (attempt.completed_at ?? attempt.updated_at).toISOString(), recorded: attempt.payment_id !== null };
    },
  };
}

export type CollectionService = ReturnType<typeof createCollectionService>;
