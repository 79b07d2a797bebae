import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { Decimal } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type ProviderName = 'stripe';
export type CollectOn = 'raised' | 'sent';
import type { AttemptStatus } from '../../../workflows/invoice-collection.types';

export type { AttemptStatus };

/** Settled one way or the other: nothing more comes from the gateway for it but a refund. */
export const FINAL_STATUSES: readonly AttemptStatus[] = ['succeeded', 'failed', 'refunded'];

export interface ProviderAccountRow {
  organisation_id: string;
  provider: ProviderName;
  /** Sealed (src/security/secret-box.ts). */
  secret_key: string;
  webhook_secret: string;
  secret_key_last4: string;
  collect_on: CollectOn;
  created_at: Date;
  updated_at: Date;
}

export interface CustomerLinkRow {
  customer_id: string;
  organisation_id: string;
  provider: ProviderName;
  provider_customer_id: string;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  id: string;
  organisation_id: string;
  invoice_id: string;
  customer_id: string;
  attempt: number;
  provider: ProviderName;
  amount: string;
  currency: string;
  status: AttemptStatus;
  provider_payment_id: string | null;
  action_url: string | null;
  failure_code: string | null;
  failure_message: string | null;
  payment_id: string | null;
  refunded_amount: string;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

export interface AttemptOutcome {
  status: AttemptStatus;
  providerPaymentId?: string | null;
  actionUrl?: string | null;
  failureCode?: string | null;
  failureMessage?: string | null;
}

export interface DunningCampaignRow {
  id: string;
  organisation_id: string;
  customer_id: string | null;
  name: string;
  max_attempts: number;
  days_between_attempts: number;
  /** Currency → decimal string: below it, a failed collection is not tried again. */
  minimum_amount_due: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface GatewayRefundRow {
  id: string;
  organisation_id: string;
  credit_note_id: string;
  attempt_id: string;
  amount: string;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
  provider_refund_id: string | null;
  failure_message: string | null;
  created_at: Date;
  updated_at: Date;
}

/** What the gateway refunded (`refunded`) beyond the refunds asked of it here (`asked`), never below nothing. */
export function unbookedOf(refunded: string, asked: string | undefined): string {
  return Decimal.max(0, new Decimal(refunded).minus(asked ?? '0')).toFixed();
}

/** What a refund of a collected invoice can be: paid back from what the gateway holds, or booked. */
export interface GatewayRefundable {
  provider: string;
  /** What the gateway took and still holds. */
  amount: string;
  /** What it refunded by its own means that no credit note books yet. */
  unbooked: string;
  currency: string;
}

export interface ReconciliationRow {
  organisation_id: string;
  provider: ProviderName;
  days: number;
  differences: unknown[];
  checked_at: Date;
}

export const DUNNING_ONE_PER_SCOPE = 'dunning_campaigns_one_per_scope';

export function createGatewayRepository(db: Knex) {
  const campaigns = (organisationId: string) => db<DunningCampaignRow>('dunning_campaigns').where({ organisation_id: organisationId }).whereNull('deleted_at');
  /** The invoice's attempts whose money a gateway took and a payment records (refunded later or not). */
  const collected = (invoiceId: string) => db<AttemptRow>('payment_attempts').where({ invoice_id: invoiceId }).whereIn('status', ['succeeded', 'refunded']).whereNotNull('payment_id');

  /**
   * What the refunds asked here of each attempt add up to: those not failed, pending ones too (they may
   * have reached the gateway), so that what is left unbooked is never more than what really is.
   */
  async function refundsAsked(attemptIds: readonly string[]): Promise<Map<string, string>> {
    if (attemptIds.length === 0) return new Map();
    const rows = await db('payment_gateway_refunds')
      .whereIn('attempt_id', [...attemptIds])
      .whereNot({ status: 'failed' })
      .groupBy('attempt_id')
      .select<Array<{ attempt_id: string; amount: string }>>('attempt_id', db.raw('sum(amount)::text AS amount'));
    return new Map(rows.map((row) => [row.attempt_id, row.amount]));
  }

  /** What the gateway says it refunded of the attempt's payment that no credit note's refund books (its dashboard's). */
  async function unbookedRefund(attempt: Pick<AttemptRow, 'id' | 'refunded_amount'>): Promise<string> {
    return unbookedOf(attempt.refunded_amount, (await refundsAsked([attempt.id])).get(attempt.id));
  }

  return {
    async saveAccount(row: Omit<ProviderAccountRow, 'created_at' | 'updated_at'>): Promise<ProviderAccountRow> {
      const [saved] = await db('payment_provider_accounts')
        .insert(row)
        .onConflict(['organisation_id', 'provider'])
        .merge({ ...row, updated_at: db.fn.now() })
        .returning<ProviderAccountRow[]>('*');
      return saved!;
    },

    async findAccount(organisationId: string, provider: ProviderName): Promise<ProviderAccountRow | undefined> {
      return db<ProviderAccountRow>('payment_provider_accounts').where({ organisation_id: organisationId, provider }).first();
    },

    async saveLink(row: Omit<CustomerLinkRow, 'created_at' | 'updated_at'>): Promise<CustomerLinkRow> {
      const [saved] = await db('customer_payment_providers')
        .insert(row)
        .onConflict('customer_id')
        .merge({ provider: row.provider, provider_customer_id: row.provider_customer_id, updated_at: db.fn.now() })
        .returning<CustomerLinkRow[]>('*');
      return saved!;
    },

    async findLink(organisationId: string, customerId: string): Promise<CustomerLinkRow | undefined> {
      return db<CustomerLinkRow>('customer_payment_providers').where({ organisation_id: organisationId, customer_id: customerId }).first();
    },

    /** The invoice's latest attempt, locked until the transaction ends when `lock` is set. */
    async latestAttempt(invoiceId: string, lock = false): Promise<AttemptRow | undefined> {
      const query = db<AttemptRow>('payment_attempts').where({ invoice_id: invoiceId }).orderBy('attempt', 'desc').first();
      return lock ? query.forUpdate() : query;
    },

    /** The earliest attempt the gateway says succeeded whose money no payment records yet. */
    async unsettledSuccess(invoiceId: string): Promise<AttemptRow | undefined> {
      return db<AttemptRow>('payment_attempts').where({ invoice_id: invoiceId, status: 'succeeded' }).whereNull('payment_id').orderBy('attempt').first();
    },

    /** A gateway's payment of the invoice that is under way or taken but not yet recorded: it will pay the invoice. */
    async collecting(invoiceId: string): Promise<AttemptRow | undefined> {
      return db<AttemptRow>('payment_attempts')
        .where({ invoice_id: invoiceId })
        .andWhere((where) => where.where({ status: 'processing' }).orWhere((taken) => taken.where({ status: 'succeeded' }).whereNull('payment_id')))
        .orderBy('attempt')
        .first();
    },

    /** Whether a gateway's payment already pays (or paid, before a refund) the invoice. */
    async anyCollected(invoiceId: string): Promise<boolean> {
      return (await collected(invoiceId).first('id')) !== undefined;
    },

    async insertAttempt(row: Pick<AttemptRow, 'organisation_id' | 'invoice_id' | 'customer_id' | 'attempt' | 'provider' | 'amount' | 'currency'> & Partial<Pick<AttemptRow, 'status' | 'provider_payment_id' | 'completed_at'>>): Promise<AttemptRow> {
      const [inserted] = await db('payment_attempts')
        .insert({ id: newId('pat'), ...row })
        .returning<AttemptRow[]>('*');
      return inserted!;
    },

    async findAttempt(organisationId: string, id: string, lock = false): Promise<AttemptRow | undefined> {
      const query = db<AttemptRow>('payment_attempts').where({ organisation_id: organisationId, id }).first();
      return lock ? query.forUpdate() : query;
    },

    async findAttemptOfGatewayPayment(organisationId: string, provider: ProviderName, providerPaymentId: string, lock = false): Promise<AttemptRow | undefined> {
      const query = db<AttemptRow>('payment_attempts').where({ organisation_id: organisationId, provider, provider_payment_id: providerPaymentId }).first();
      return lock ? query.forUpdate() : query;
    },

    async findAttemptOfPayment(paymentId: string): Promise<AttemptRow | undefined> {
      return db<AttemptRow>('payment_attempts').where({ payment_id: paymentId }).first();
    },

    async listAttempts(organisationId: string, invoiceId: string, paging: PageQuery): Promise<Page<AttemptRow>> {
      return paginate<AttemptRow, AttemptRow>(db<AttemptRow>('payment_attempts').where({ organisation_id: organisationId, invoice_id: invoiceId }).select('*'), paging, {
        searchColumns: ['status', 'provider_payment_id'],
        orderBy: [{ column: 'attempt', order: 'asc' }],
        map: (row) => row,
      });
    },

    /** The attempts of the organisation made since `since`, with a gateway payment. */
    async attemptsSince(organisationId: string, provider: ProviderName, since: Date): Promise<AttemptRow[]> {
      return db<AttemptRow>('payment_attempts').where({ organisation_id: organisationId, provider }).where('created_at', '>=', since).whereNotNull('provider_payment_id');
    },

    async recordOutcome(id: string, outcome: AttemptOutcome): Promise<AttemptRow> {
      const final = FINAL_STATUSES.includes(outcome.status);
      const [row] = await db('payment_attempts')
        .where({ id })
        .update({
          status: outcome.status,
          ...(outcome.providerPaymentId !== undefined ? { provider_payment_id: outcome.providerPaymentId } : {}),
          ...(outcome.actionUrl !== undefined ? { action_url: outcome.actionUrl } : {}),
          ...(outcome.failureCode !== undefined ? { failure_code: outcome.failureCode } : {}),
          ...(outcome.failureMessage !== undefined ? { failure_message: outcome.failureMessage } : {}),
          updated_at: db.fn.now(),
          ...(final ? { completed_at: db.raw('coalesce(completed_at, now())') } : {}),
        })
        .returning<AttemptRow[]>('*');
      return row!;
    },

    async setAttemptPayment(id: string, paymentId: string): Promise<void> {
      await db('payment_attempts').where({ id }).update({ payment_id: paymentId, updated_at: db.fn.now() });
    },

    /** What the gateway says it refunded of the attempt's payment, in all; `refunded` once it is all of it. */
    async setRefunded(id: string, total: string, fullyRefunded: boolean): Promise<void> {
      await db('payment_attempts')
        .where({ id })
        .update({ refunded_amount: total, ...(fullyRefunded ? { status: 'refunded', completed_at: db.raw('coalesce(completed_at, now())') } : {}), updated_at: db.fn.now() });
    },

    /** The succeeded attempt whose payment paid the invoice, if a gateway collected it. */
    async collectedAttemptOfInvoice(invoiceId: string): Promise<AttemptRow | undefined> {
      return collected(invoiceId).first();
    },

    /**
     * What a refund through the gateway that collected the invoice can still pay back: what it took, less
     * what it says it refunded (at its dashboard too), less the refunds recorded here that it has not paid
     * yet. Undefined when no gateway collected the invoice.
     */
    async gatewayRefundable(invoiceId: string): Promise<GatewayRefundable | undefined> {
      const attempt = await collected(invoiceId).first();
      if (!attempt) return undefined;
      const unbooked = await unbookedRefund(attempt);
      const [recorded] = await db('payments')
        .where({ invoice_id: invoiceId })
        .whereNull('deleted_at')
        .whereNotNull('credit_note_id')
        .select<Array<{ amount: string | null }>>(db.raw('(-sum(amount))::text AS amount'));
      const [paidBack] = await db('payment_gateway_refunds').where({ attempt_id: attempt.id, status: 'succeeded' }).select<Array<{ amount: string | null }>>(db.raw('sum(amount)::text AS amount'));
      const left = new Decimal(attempt.amount).minus(attempt.refunded_amount).plus(paidBack?.amount ?? '0').minus(recorded?.amount ?? '0');
      return { provider: attempt.provider, amount: Decimal.max(left, 0).toFixed(), unbooked, currency: attempt.currency };
    },

    unbookedRefund,
    refundsAsked,

    /** Inside a transaction: the attempt, locked until commit (a refund's claim against what it took). */
    async lockAttempt(id: string): Promise<AttemptRow | undefined> {
      return db<AttemptRow>('payment_attempts').where({ id }).forUpdate().first();
    },

    /** The credit note's refund through the gateway, recorded once (a repeat finds the first). */
    async claimRefund(row: Pick<GatewayRefundRow, 'organisation_id' | 'credit_note_id' | 'attempt_id' | 'amount' | 'currency'> & Partial<Pick<GatewayRefundRow, 'status' | 'failure_message'>>): Promise<GatewayRefundRow> {
      await db('payment_gateway_refunds').insert({ id: newId('gre'), ...row }).onConflict('credit_note_id').ignore();
      return (await db<GatewayRefundRow>('payment_gateway_refunds').where({ credit_note_id: row.credit_note_id }).first())!;
    },

    async findRefundOfCreditNote(creditNoteId: string): Promise<GatewayRefundRow | undefined> {
      return db<GatewayRefundRow>('payment_gateway_refunds').where({ credit_note_id: creditNoteId }).first();
    },

    async recordRefund(id: string, outcome: Pick<GatewayRefundRow, 'status'> & Partial<Pick<GatewayRefundRow, 'provider_refund_id' | 'failure_message'>>): Promise<void> {
      await db('payment_gateway_refunds')
        .where({ id })
        .update({ ...outcome, updated_at: db.fn.now() });
    },

    async saveReconciliation(organisationId: string, provider: ProviderName, days: number, differences: unknown[]): Promise<ReconciliationRow> {
      const row = { organisation_id: organisationId, provider, days, differences: JSON.stringify(differences), checked_at: db.fn.now() };
      const [saved] = await db('payment_reconciliations').insert(row).onConflict(['organisation_id', 'provider']).merge().returning<ReconciliationRow[]>('*');
      return saved!;
    },

    async findReconciliation(organisationId: string, provider: ProviderName): Promise<ReconciliationRow | undefined> {
      return db<ReconciliationRow>('payment_reconciliations').where({ organisation_id: organisationId, provider }).first();
    },

    /** Marks the gateway's event handled: true the first time, false when a racing delivery marked it first. */
    async claimEvent(organisationId: string, provider: ProviderName, eventId: string, type: string): Promise<boolean> {
      const inserted = await db('payment_gateway_events').insert({ organisation_id: organisationId, provider, event_id: eventId, type }).onConflict(['organisation_id', 'provider', 'event_id']).ignore().returning('event_id');
      return inserted.length > 0;
    },

    async eventSeen(organisationId: string, provider: ProviderName, eventId: string): Promise<boolean> {
      return (await db('payment_gateway_events').where({ organisation_id: organisationId, provider, event_id: eventId }).first('event_id')) !== undefined;
    },

    async insertCampaign(row: Pick<DunningCampaignRow, 'organisation_id' | 'customer_id' | 'name' | 'max_attempts' | 'days_between_attempts' | 'minimum_amount_due'>): Promise<DunningCampaignRow> {
      const [inserted] = await db('dunning_campaigns')
        .insert({ id: newId('dun'), ...row, minimum_amount_due: JSON.stringify(row.minimum_amount_due) })
        .returning<DunningCampaignRow[]>('*');
      return inserted!;
    },

    async findCampaign(organisationId: string, id: string): Promise<DunningCampaignRow | undefined> {
      return campaigns(organisationId).where({ id }).first();
    },

    async listCampaigns(organisationId: string, paging: PageQuery, customerId?: string): Promise<Page<DunningCampaignRow>> {
      const query = campaigns(organisationId).select('*');
      if (customerId) query.where({ customer_id: customerId });
      return paginate<DunningCampaignRow, DunningCampaignRow>(query, paging, { searchColumns: ['name'], map: (row) => row });
    },

    async updateCampaign(organisationId: string, id: string, patch: Partial<Pick<DunningCampaignRow, 'name' | 'max_attempts' | 'days_between_attempts' | 'minimum_amount_due'>>): Promise<DunningCampaignRow | undefined> {
      const [row] = await db('dunning_campaigns')
        .where({ organisation_id: organisationId, id })
        .whereNull('deleted_at')
        .update({ ...patch, ...(patch.minimum_amount_due ? { minimum_amount_due: JSON.stringify(patch.minimum_amount_due) } : {}), updated_at: db.fn.now() })
        .returning<DunningCampaignRow[]>('*');
      return row;
    },

    async deleteCampaign(organisationId: string, id: string): Promise<boolean> {
      return (await campaigns(organisationId).where({ id }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() })) > 0;
    },

    /** The customer's own campaign, else the organisation's; undefined: failed collections are not tried again. */
    async campaignFor(organisationId: string, customerId: string): Promise<DunningCampaignRow | undefined> {
      return campaigns(organisationId)
        .where((q) => q.where({ customer_id: customerId }).orWhereNull('customer_id'))
        .orderByRaw('customer_id IS NULL')
        .first();
    },
  };
}

export type GatewayRepository = ReturnType<typeof createGatewayRepository>;
