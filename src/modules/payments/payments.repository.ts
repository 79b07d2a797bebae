import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export const PAYMENT_IDEMPOTENCY_KEY_UNIQUE = 'payments_idempotency_key_unique';

export type IdempotencyScope = 'client' | 'system';

export interface PaymentRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  invoice_id: string | null;
  /** NUMERIC, already rounded to the currency's minor unit. */
  amount: string;
  currency: string;
  paid_at: Date;
  method: string | null;
  reference: string | null;
  idempotency_key: string | null;
  idempotency_fingerprint: string | null;
  idempotency_scope: IdempotencyScope | null;
  /** Set on a refund: a negative payment made by issuing this credit note. */
  credit_note_id: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface NewPayment {
  customerId: string;
  invoiceId: string | null;
  amount: string;
  currency: string;
  /** A calendar day (an invoice's paid date) or an instant. */
  paidAt: Date | string;
  method: string | null;
  reference: string | null;
  /** A refund: the credit note that pays the amount back (negative). */
  creditNoteId?: string;
  /**
   * `client`: the caller's Idempotency-Key with its request's fingerprint. `system`: a key made by the
   * server (an invoice's payment), never replayed from a request. The two never collide.
   */
  idempotency: { scope: 'client'; key: string; fingerprint: string } | { scope: 'system'; key: string; fingerprint: null } | null;
}

export interface PaymentPatch {
  amount?: string;
  paid_at?: Date;
  method?: string | null;
  reference?: string | null;
}

export interface PaymentFilter {
  customerId?: string;
  invoiceId?: string;
}

/** Soft-deleted payments are kept (and keep their idempotency key) but no read returns them. */
export function createPaymentRepository(db: Knex) {
  const live = (organisationId: string) => db<PaymentRow>('payments').where({ organisation_id: organisationId }).whereNull('deleted_at');

  return {
    async insert(organisationId: string, payment: NewPayment): Promise<PaymentRow> {
      // Untyped table: a calendar day goes in as text and Postgres reads it in the session's time zone.
      const [row] = await db('payments')
        .insert({
          id: newId('pay'),
          organisation_id: organisationId,
          customer_id: payment.customerId,
          invoice_id: payment.invoiceId,
          amount: payment.amount,
          currency: payment.currency,
          paid_at: payment.paidAt,
          method: payment.method,
          reference: payment.reference,
          idempotency_key: payment.idempotency?.key ?? null,
          idempotency_fingerprint: payment.idempotency?.fingerprint ?? null,
          idempotency_scope: payment.idempotency?.scope ?? null,
          credit_note_id: payment.creditNoteId ?? null,
        })
        .returning<PaymentRow[]>('*');
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<PaymentRow | undefined> {
      return live(organisationId).where({ id }).first();
    },

    /** Inside a transaction: the payment as it is now, locked until commit (its invoice's lock taken first). */
    async lock(organisationId: string, id: string): Promise<PaymentRow | undefined> {
      return live(organisationId).where({ id }).forUpdate().first();
    },

    /** Deleted payments included: their key stays spent. */
    async findByIdempotencyKey(organisationId: string, scope: IdempotencyScope, key: string): Promise<PaymentRow | undefined> {
      return db<PaymentRow>('payments').where({ organisation_id: organisationId, idempotency_scope: scope, idempotency_key: key }).first();
    },

    async list(organisationId: string, paging: PageQuery, filter: PaymentFilter): Promise<Page<PaymentRow>> {
      const query = live(organisationId).select('*');
      if (filter.customerId) query.where({ customer_id: filter.customerId });
      if (filter.invoiceId) query.where({ invoice_id: filter.invoiceId });
      return paginate<PaymentRow, PaymentRow>(query, paging, {
        searchColumns: ['reference', 'method', 'invoice_id'],
        orderBy: [
          { column: 'paid_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        map: (row) => row,
      });
    },

    /** What can still be paid back on an invoice: its live payments less its live refunds (0 if none). */
    async refundable(organisationId: string, invoiceId: string): Promise<string> {
      const [row] = await live(organisationId).where({ invoice_id: invoiceId }).select<Array<{ amount: string | null }>>(db.raw('sum(amount)::text AS amount'));
      const amount = row?.amount ?? '0';
      return amount.startsWith('-') ? '0' : amount;
    },

    /**
     * What the invoice's live payments in its currency came to, its refunds left out: what is no longer
     * owed of its amount due, for mark-paid and for a gateway's charge alike.
     */
    async paidTowards(organisationId: string, invoiceId: string, currency: string): Promise<string> {
      const [row] = await live(organisationId).where({ invoice_id: invoiceId, currency }).whereNull('credit_note_id').select<Array<{ amount: string | null }>>(db.raw('sum(amount)::text AS amount'));
      return row?.amount ?? '0';
    },

    /** The invoice's live payments and refunds, oldest first: what its document lists. */
    async listOfInvoice(organisationId: string, invoiceId: string): Promise<PaymentRow[]> {
      return live(organisationId).where({ invoice_id: invoiceId }).orderBy([{ column: 'paid_at' }, { column: 'id' }]);
    },


    async update(organisationId: string, id: string, patch: PaymentPatch): Promise<PaymentRow | undefined> {
      const [row] = await live(organisationId)
        .where({ id })
        .update({ ...patch, updated_at: db.fn.now() })
        .returning('*');
      return row;
    },

    async softDelete(organisationId: string, id: string): Promise<boolean> {
      const deleted = await live(organisationId).where({ id }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() });
      return deleted > 0;
    },

    /** An invoice or credit note step and its undo: deletes or restores the payment the step made or reversed. */
    async setDeleted(id: string, deleted: boolean): Promise<void> {
      await db('payments').where({ id }).update({ deleted_at: deleted ? db.fn.now() : null, updated_at: db.fn.now() });
    },
  };
}

export type PaymentRepository = ReturnType<typeof createPaymentRepository>;
