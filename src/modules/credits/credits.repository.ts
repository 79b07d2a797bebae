import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { AppError } from '../../domain/errors';
import { Decimal, formatAmount, toDecimal } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';

/** credit_balances.balance is NUMERIC(24,4): below 10^20. */
const BALANCE_LIMIT = '1e20';

export const CREDIT_ENTRY_KINDS = ['grant', 'purchase', 'consumption', 'expiry', 'credit_note', 'adjustment'] as const;
export type CreditEntryKind = (typeof CREDIT_ENTRY_KINDS)[number];

export interface CreditEntryRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  currency: string;
  kind: CreditEntryKind;
  amount: string;
  balance_after: string;
  reason: string | null;
  credit_note_id: string | null;
  invoice_id: string | null;
  expires_at: Date | null;
  created_at: Date;
}

export interface NewCreditEntry {
  organisationId: string;
  customerId: string;
  currency: string;
  kind: CreditEntryKind;
  /** Signed: a grant adds, a consumption takes away. */
  amount: string;
  reason?: string | null;
  creditNoteId?: string | null;
  invoiceId?: string | null;
}

/**
 * Customer credit balances: an append-only ledger and one balance row per (customer, currency), which
 * every entry locks, so entries of one balance are written one after another and the running balance
 * each records is exact. The balance never goes below zero. `db` must be a transaction for `append`.
 */
export function createCreditRepository(db: Knex) {
  return {
    /** Adds an entry and moves the balance by its amount; a balance that would go below zero is a conflict. */
    async append(entry: NewCreditEntry): Promise<CreditEntryRow> {
      const key = { organisation_id: entry.organisationId, customer_id: entry.customerId, currency: entry.currency };
      await db('credit_balances').insert({ ...key, balance: 0 }).onConflict(['organisation_id', 'customer_id', 'currency']).ignore();
      const current = (await db('credit_balances').where(key).forUpdate().first<{ balance: string }>())!;
      const after = toDecimal(current.balance).plus(entry.amount);
      if (after.isNegative()) {
        throw AppError.conflict(`the customer's ${entry.currency} credit balance is ${formatAmount(current.balance, entry.currency)}, less than ${formatAmount(toDecimal(entry.amount).negated(), entry.currency)}`);
      }
      if (after.greaterThanOrEqualTo(BALANCE_LIMIT)) throw AppError.conflict(`the customer's ${entry.currency} credit balance would reach 10^20, more than it can hold`);
      await db('credit_balances').where(key).update({ balance: after.toFixed(), updated_at: db.fn.now() });
      const [row] = await db<CreditEntryRow>('credit_ledger')
        .insert({
          id: newId('cle'),
          ...key,
          kind: entry.kind,
          amount: entry.amount,
          balance_after: after.toFixed(),
          reason: entry.reason ?? null,
          credit_note_id: entry.creditNoteId ?? null,
          invoice_id: entry.invoiceId ?? null,
        })
        .returning('*');
      return row!;
    },

    /**
     * Takes up to `most` from the customer's balance in `currency` for an invoice: a `consumption` entry of
     * what there was, if anything. Returns the amount taken.
     */
    async consume(entry: Omit<NewCreditEntry, 'kind' | 'amount'> & { most: string }): Promise<string> {
      const key = { organisation_id: entry.organisationId, customer_id: entry.customerId, currency: entry.currency };
      const current = await db('credit_balances').where(key).forUpdate().first<{ balance: string } | undefined>();
      const taken = Decimal.min(toDecimal(current?.balance ?? '0'), toDecimal(entry.most));
      if (taken.lessThanOrEqualTo(0)) return '0';
      const { most: _most, ...rest } = entry;
      await this.append({ ...rest, kind: 'consumption', amount: taken.negated().toFixed() });
      return taken.toFixed();
    },

    async balances(organisationId: string, customerId: string): Promise<Array<{ currency: string; balance: string }>> {
      return db('credit_balances').where({ organisation_id: organisationId, customer_id: customerId }).orderBy('currency').select('currency', 'balance');
    },

    async entries(organisationId: string, customerId: string, filter: { currency?: string }, paging: PageQuery): Promise<Page<CreditEntryRow>> {
      const query = db<CreditEntryRow>('credit_ledger').where({ organisation_id: organisationId, customer_id: customerId }).select('*');
      if (filter.currency) query.where({ currency: filter.currency });
      return paginate<CreditEntryRow, CreditEntryRow>(query, paging, { searchColumns: ['reason'], map: (row) => row });
    },
  };
}

export type CreditRepository = ReturnType<typeof createCreditRepository>;
