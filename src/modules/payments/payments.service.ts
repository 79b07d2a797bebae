import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { currencyMinorUnits } from '../../domain/currencies';
import { Decimal, formatAmount, hasAtMostMinorUnits } from '../../domain/money';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import { isAhead } from '../../domain/iso-dates';
import type { Page, PageQuery } from '../../http/paging';
import { customersIn } from '../customers';
import { invoicesIn, type InvoiceRow } from '../invoices';
import {
  PAYMENT_IDEMPOTENCY_KEY_UNIQUE,
  createPaymentRepository,
  type PaymentFilter,
  type PaymentRow,
} from './payments.repository';
import { stillOwed } from './still-owed';
import { createGatewayRepository } from './gateway.repository';
import type { CreatePaymentBody, UpdatePaymentBody } from './payments.schemas';

export interface Payment {
  id: string;
  customerId: string;
  invoiceId: string | null;
  amount: string;
  currency: string;
  paidAt: string;
  method: string | null;
  reference: string | null;
  creditNoteId: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    customerId: row.customer_id,
    invoiceId: row.invoice_id,
    amount: formatAmount(row.amount, row.currency),
    currency: row.currency,
    paidAt: row.paid_at.toISOString(),
    method: row.method,
    reference: row.reference,
    creditNoteId: row.credit_note_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export interface CreatedPayment {
  payment: Payment;
  /** True when an earlier request with the same Idempotency-Key created it. */
  replayed: boolean;
}

/** A refund belongs to its credit note: it changes when the credit note is voided or undone, not by hand. */
function assertNotRefund(row: PaymentRow): void {
  if (row.credit_note_id) throw AppError.conflict(`this payment is the refund of credit note ${row.credit_note_id}; void the credit note instead`);
}

/** A payment a gateway collected changes only through the gateway: money goes back through a refund. */
async function assertNotCollected(db: Knex, row: PaymentRow): Promise<void> {
  const attempt = await createGatewayRepository(db).findAttemptOfPayment(row.id);
  if (attempt) throw AppError.conflict(`this payment was collected through ${attempt.provider} (${attempt.provider_payment_id}); refund it with a credit note instead`);
}

/** The key of the payment that marking an invoice paid records: one per transition of the invoice. */
export const markPaidPaymentKey = (invoiceId: string, seq: number): string => `invoice:${invoiceId}:${seq}`;
const MARK_PAID_KEY = /^invoice:(.+):(\d+)$/;

/**
 * The payment that marking an invoice paid recorded is the invoice's: its amount and day go, or change,
 * by undoing that step, so that a paid invoice never keeps its status over a payment edited or removed.
 */
function assertNotMarkedPaid(row: PaymentRow, change: { amount?: unknown; paidAt?: unknown } | 'delete'): void {
  const key = row.idempotency_scope === 'system' ? MARK_PAID_KEY.exec(row.idempotency_key ?? '') : null;
  if (!key || key[1] !== row.invoice_id) return;
  if (change !== 'delete' && change.amount === undefined && change.paidAt === undefined) return;
  throw AppError.conflict(`this payment was recorded by marking invoice ${row.invoice_id} paid; undo that step instead (POST /fsm/invoice/${row.invoice_id}/undo)`);
}

/**
 * A payment on a paid invoice is what paid it: deleted or lowered, it would leave the invoice paid and short
 * (409). The invoice is read under its row lock, which holds its status until the change commits.
 */
function assertInvoiceNotPaid(invoice: InvoiceRow, what: 'deleted' | 'lowered'): void {
  if (invoice.status === 'paid') {
    throw AppError.conflict(`invoice ${invoice.id} is paid, and this payment is part of what paid it: it cannot be ${what} unless the invoice's mark-paid is undone first (POST /fsm/invoice/${invoice.id}/undo)`);
  }
}

/** A payment records money that has arrived: an instant ahead of now has not. */
function assertArrived(paidAt: string | undefined): void {
  if (paidAt !== undefined && isAhead(paidAt)) throw AppError.validation('must not be in the future: the instant the money arrived', 'body.paidAt');
}

/** More decimals than the currency carries is a mistake to report, not a rounding to hide. */
function assertFitsCurrency(amount: string, currency: string): void {
  if (!hasAtMostMinorUnits(amount, currency)) {
    throw AppError.validation(`${currency} amounts carry at most ${currencyMinorUnits(currency)} decimal places`, 'body.amount');
  }
}

/** The parsed body, so that `42.1` and `"42.10"`, or the same instant in two zones, are the same request. */
function fingerprintOf(input: CreatePaymentBody): string {
  const canonical = [
    input.customerId,
    input.invoiceId ?? null,
    input.amount,
    input.currency,
    new Date(input.paidAt).toISOString(),
    input.method ?? null,
    input.reference ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/** A key names one request for good: a different body, or a payment since deleted, cannot be replayed. */
function replayOf(row: PaymentRow, fingerprint: string): CreatedPayment {
  if (row.idempotency_fingerprint !== fingerprint) {
    throw AppError.conflict('This Idempotency-Key was used with a different request body', 'headers.idempotency-key');
  }
  if (row.deleted_at) throw AppError.conflict('The payment created with this Idempotency-Key has been deleted');
  return { payment: toPayment(row), replayed: true };
}

export function createPaymentService(db: Knex) {
  const payments = createPaymentRepository(db);

  /**
   * A change of a payment, in one transaction under its invoice's row lock (the lock every writer of the
   * invoice's payments and status takes), then the payment's own: the checks read the payment and the
   * invoice as they are when the change commits, never as an earlier read found them. Two changes of one
   * payment at once take turns.
   */
  async function inLock<T>(organisationId: string, id: string, change: (trx: Knex.Transaction, current: PaymentRow, invoice: InvoiceRow | undefined) => Promise<T>): Promise<T> {
    const unlocked = await found(organisationId, id);
    return db.transaction(async (trx) => {
      // The invoice a payment names never changes: it is locked first, as the mark-paid step locks it.
      const invoice = unlocked.invoice_id === null ? undefined : orNotFound(await invoicesIn(trx).lock(organisationId, unlocked.invoice_id), 'Invoice');
      const current = orNotFound(await createPaymentRepository(trx).lock(organisationId, id), 'Payment');
      return change(trx, current, invoice);
    });
  }

  async function found(organisationId: string, id: string): Promise<PaymentRow> {
    return orNotFound(await payments.findById(organisationId, id), 'Payment');
  }

  return {
    /**
     * With an Idempotency-Key, the first request creates and every later one with the same key and
     * body gets that payment back. Concurrent first requests meet at the unique index: the loser
     * waits for the winner's commit, then replays it.
     */
    async create(organisationId: string, input: CreatePaymentBody, idempotencyKey?: string): Promise<CreatedPayment> {
      const fingerprint = idempotencyKey ? fingerprintOf(input) : '';
      if (idempotencyKey) {
        const earlier = await payments.findByIdempotencyKey(organisationId, 'client', idempotencyKey);
        if (earlier) return replayOf(earlier, fingerprint);
      }
      assertFitsCurrency(input.amount, input.currency);
      assertArrived(input.paidAt);
      try {
        const row = await db.transaction(async (trx) => {
          // The customer stays locked until commit, so deleting it cannot miss the payment made here.
          if (!(await customersIn(trx).lockLive(organisationId, input.customerId))) throw AppError.notFound('Customer');
          if (input.invoiceId) {
            // A payment of an invoice is in its currency and from its customer: it counts against what it owes.
            // Locked until commit, so that a cancel or a raise running now sees the payment, or runs first.
            const invoice = orNotFound(await invoicesIn(trx).lock(organisationId, input.invoiceId), 'Invoice');
            // What the request itself gets wrong first: an amount in another currency is compared with nothing.
            if (invoice.currency !== input.currency) throw AppError.validation(`must be the invoice's currency, ${invoice.currency}`, 'body.currency');
            if (invoice.customer_id !== null && invoice.customer_id !== input.customerId) throw AppError.validation("is another customer's invoice", 'body.invoiceId');
            if (invoice.status === 'draft' || invoice.status === 'cancelled') {
              throw AppError.conflict(`the invoice is ${invoice.status}: a payment counts against what a raised invoice owes${invoice.status === 'draft' ? '; raise it first, or record the payment without invoiceId' : ''}`);
            }
            // Never more than it still owes: the excess would count nowhere (the amount due stops at nothing).
            if (invoice.status === 'paid') throw AppError.conflict('the invoice is paid and owes nothing: record the payment on account, without invoiceId');
            const owing = await stillOwed(trx, invoice);
            if (owing !== null) {
              const owed = Decimal.max(0, owing);
              if (new Decimal(input.amount).gt(owed)) {
                throw AppError.conflict(
                  `the invoice owes ${formatAmount(owed.toFixed(), invoice.currency)} ${invoice.currency}, less than this payment's ${formatAmount(input.amount, invoice.currency)}: record what it owes against it and the rest on account, without invoiceId`,
                );
              }
            }
          }
          const inserted = await createPaymentRepository(trx).insert(organisationId, {
            customerId: input.customerId,
            invoiceId: input.invoiceId ?? null,
            amount: input.amount,
            currency: input.currency,
            paidAt: new Date(input.paidAt),
            method: input.method ?? null,
            reference: input.reference ?? null,
            idempotency: idempotencyKey ? { scope: 'client', key: idempotencyKey, fingerprint } : null,
          });
          await recordEvent(trx, organisationId, domainEvent('payment.created', toPayment(inserted)));
          return inserted;
        });
        return { payment: toPayment(row), replayed: false };
      } catch (error) {
        if (idempotencyKey && isUniqueViolation(error, PAYMENT_IDEMPOTENCY_KEY_UNIQUE)) {
          const winner = await payments.findByIdempotencyKey(organisationId, 'client', idempotencyKey);
          if (winner) return replayOf(winner, fingerprint);
        }
        throw error;
      }
    },

    async getById(organisationId: string, id: string): Promise<Payment> {
      return toPayment(await found(organisationId, id));
    },

    async list(organisationId: string, paging: PageQuery, filter: PaymentFilter): Promise<Page<Payment>> {
      const page = await payments.list(organisationId, paging, filter);
      return { ...page, items: page.items.map(toPayment) };
    },

    /** The currency is fixed at creation, so a new amount is checked against the stored one. */
    async update(organisationId: string, id: string, input: UpdatePaymentBody): Promise<Payment> {
      const row = await inLock(organisationId, id, async (trx, current, invoice) => {
        assertNotRefund(current);
        await assertNotCollected(trx, current);
        assertNotMarkedPaid(current, input);
        if (input.amount !== undefined) assertFitsCurrency(input.amount, current.currency);
        assertArrived(input.paidAt ?? undefined);
        // A paid invoice keeps what paid it: a smaller amount would leave it paid and short.
        if (invoice && input.amount !== undefined && new Decimal(input.amount).lt(current.amount)) assertInvoiceNotPaid(invoice, 'lowered');
        // A larger amount may not take the payment past what its invoice still owes, as a new payment may not.
        if (invoice && input.amount !== undefined && new Decimal(input.amount).gt(current.amount)) {
          const owing = await stillOwed(trx, invoice);
          if (owing !== null) {
            // What it owes besides this payment's own amount.
            const owed = Decimal.max(0, new Decimal(owing).plus(current.amount));
            if (new Decimal(input.amount).gt(owed)) {
              throw AppError.conflict(`the invoice owes ${formatAmount(owed.toFixed(), invoice.currency)} ${invoice.currency} besides its other payments, less than ${formatAmount(input.amount, invoice.currency)}: record the rest on account, without invoiceId`);
            }
          }
        }
        return createPaymentRepository(trx).update(organisationId, id, {
          amount: input.amount,
          paid_at: input.paidAt === undefined ? undefined : new Date(input.paidAt),
          method: input.method,
          reference: input.reference,
        });
      });
      return toPayment(orNotFound(row, 'Payment'));
    },

    async delete(organisationId: string, id: string): Promise<void> {
      await inLock(organisationId, id, async (trx, current, invoice) => {
        assertNotRefund(current);
        await assertNotCollected(trx, current);
        assertNotMarkedPaid(current, 'delete');
        if (invoice) assertInvoiceNotPaid(invoice, 'deleted');
        if (!(await createPaymentRepository(trx).softDelete(organisationId, id))) throw AppError.notFound('Payment');
      });
    },
  };
}

export type PaymentService = ReturnType<typeof createPaymentService>;
