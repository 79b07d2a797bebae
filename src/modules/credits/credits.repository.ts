import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { AppError, InvariantError } from '../../domain/errors';
import { drawFrom, drawOrder, drawPreferring, giveBack, outstanding, type CreditLot, type Draw } from '../../domain/credit-lots';
import { Decimal, formatAmount, toDecimal } from '../../domain/money';
import type { CreditEntry, CreditEntryKind } from './credits.schemas';
import { paginate, type Page, type PageQuery } from '../../http/paging';

/** credit_balances.balance is NUMERIC(24,4): below 10^20. */
const BALANCE_LIMIT = '1e20';


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
  /** The lots the entry took from (negative) or gave back to (positive); null before lots existed. */
  draws: Draw[] | null;
  created_at: Date;
}

export function toCreditEntry(row: CreditEntryRow): CreditEntry {
  return {
    id: row.id,
    currency: row.currency,
    kind: row.kind,
    amount: formatAmount(row.amount, row.currency),
    balanceAfter: formatAmount(row.balance_after, row.currency),
    reason: row.reason,
    creditNoteId: row.credit_note_id,
    invoiceId: row.invoice_id,
    expiresAt: row.expires_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
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
  /** Credit added: when it expires (none: never). */
  expiresAt?: Date | null;
  /** Credit added: the lot's id, when the caller chose it (a grant whose expiry was scheduled first). */
  lotId?: string;
  /**
   * Credit taken back: the entries whose credit it reverses (a credit note's, one that gave an invoice's
   * credit back), so that it is taken from the lots they added to first, whatever their expiry.
   */
  reverses?: { creditNoteId: string } | { entryId: string };
}

export interface CreditLotRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  currency: string;
  amount: string;
  remaining: string;
  expires_at: Date | null;
  expired_at: Date | null;
  entry_id: string | null;
  created_at: Date;
}

type BalanceKey = { organisation_id: string; customer_id: string; currency: string };

const keyOf = (entry: Pick<NewCreditEntry, 'organisationId' | 'customerId' | 'currency'>): BalanceKey => ({ organisation_id: entry.organisationId, customer_id: entry.customerId, currency: entry.currency });

const asLot = (row: CreditLotRow): CreditLot => ({ id: row.id, remaining: row.remaining, expiresAt: row.expires_at?.toISOString() ?? null, createdAt: row.created_at.toISOString() });

/**
 * Customer credit balances: an append-only ledger, one balance row per (customer, currency), which every
 * entry locks, so entries of one balance are written one after another and the running balance each
 * records is exact, and the lots the balance is made of (their remainders add up to it). The balance never
 * goes below zero. `db` must be a transaction for every write.
 */
export function createCreditRepository(db: Knex) {
  const lots = (key: BalanceKey) => db<CreditLotRow>('credit_lots').where(key);

  /** The balance, its row locked until commit (created at zero if the customer never had credit in the currency). */
  async function lockBalance(key: BalanceKey): Promise<Decimal> {
    await db('credit_balances').insert({ ...key, balance: 0 }).onConflict(['organisation_id', 'customer_id', 'currency']).ignore();
    return toDecimal((await db('credit_balances').where(key).forUpdate().first<{ balance: string }>())!.balance);
  }

  /** Writes an entry under the balance's lock: the lots moved by its draws, the balance, the ledger row. */
  async function write(key: BalanceKey, before: Decimal, entry: Omit<NewCreditEntry, 'organisationId' | 'customerId' | 'currency'>, draws: Draw[], id = newId('cle')): Promise<CreditEntryRow> {
    const after = before.plus(entry.amount);
    if (after.isNegative()) {
      throw AppError.conflict(`the customer's ${key.currency} credit balance is ${formatAmount(before, key.currency)}, less than ${formatAmount(toDecimal(entry.amount).negated(), key.currency)}`);
    }
    if (after.greaterThanOrEqualTo(BALANCE_LIMIT)) throw AppError.conflict(`the customer's ${key.currency} credit balance would reach 10^20, more than it can hold`);
    for (const draw of draws) await db('credit_lots').where({ id: draw.lotId }).update({ remaining: db.raw('remaining + ?::numeric', [draw.amount]) });
    await db('credit_balances').where(key).update({ balance: after.toFixed(), updated_at: db.fn.now() });
    const [row] = await db('credit_ledger')
      .insert({
        id,
        ...key,
        kind: entry.kind,
        amount: entry.amount,
        balance_after: after.toFixed(),
        reason: entry.reason ?? null,
        credit_note_id: entry.creditNoteId ?? null,
        invoice_id: entry.invoiceId ?? null,
        expires_at: entry.expiresAt ?? null,
        draws: JSON.stringify(draws),
      })
      .returning<CreditEntryRow[]>('*');
    return row!;
  }

  /**
   * Under the balance's lock: each lot expired by `asOf` and not spent gives up what is left of it (an
   * `expiry` entry, and `credits.expired`), whether its timer or a take found it due.
   */
  async function expireDue(key: BalanceKey, before: Decimal, asOf: Date, only?: string): Promise<{ balance: Decimal; expired: CreditEntryRow[] }> {
    const due = lots(key).where('remaining', '>', 0).where('expires_at', '<=', asOf).orderBy([{ column: 'expires_at' }, { column: 'id' }]);
    if (only) due.where({ id: only });
    let balance = before;
    const expired: CreditEntryRow[] = [];
    for (const lot of await due) {
      const entry = await write(key, balance, { kind: 'expiry', amount: toDecimal(lot.remaining).negated().toFixed(), reason: `credit expired on ${lot.expires_at!.toISOString()}` }, [
        { lotId: lot.id, amount: toDecimal(lot.remaining).negated().toFixed() },
      ]);
      await db('credit_lots').where({ id: lot.id }).update({ expired_at: db.fn.now() });
      await recordEvent(db, key.organisation_id, domainEvent('credits.expired', { customerId: key.customer_id, ...toCreditEntry(entry) }));
      balance = toDecimal(entry.balance_after);
      expired.push(entry);
    }
    return { balance, expired };
  }

  /** The lots a credit note's credit, or one entry's credit given back, went to, each with what it got, first to last. */
  async function lotsAddedBy(key: BalanceKey, reverses: NonNullable<NewCreditEntry['reverses']>): Promise<Draw[]> {
    const rows = db<CreditEntryRow>('credit_ledger').where(key).where('amount', '>', 0).whereNotNull('draws').orderBy([{ column: 'created_at' }, { column: 'id' }]);
    if ('creditNoteId' in reverses) rows.where({ credit_note_id: reverses.creditNoteId });
    else rows.where({ id: reverses.entryId });
    return (await rows).flatMap((row) => (row.draws ?? []).filter((draw) => toDecimal(draw.amount).greaterThan(0)));
  }

  /** Under the balance's lock: takes `amount` from the lots that expire first (expired ones gone first). */
  async function take(key: BalanceKey, entry: Omit<NewCreditEntry, 'organisationId' | 'customerId' | 'currency'>): Promise<CreditEntryRow> {
    const { balance } = await expireDue(key, await lockBalance(key), new Date());
    const wanted = toDecimal(entry.amount).negated();
    const open = (await lots(key).where('remaining', '>', 0)).map(asLot);
    const draws = entry.reverses ? drawPreferring(open, await lotsAddedBy(key, entry.reverses), wanted) : drawFrom(open, wanted);
    // The lots hold the balance: fewer is a balance too low (the write refuses it), unless they disagree.
    const drawn = draws.reduce((sum, draw) => sum.minus(draw.amount), new Decimal(0));
    if (drawn.lessThan(wanted) && balance.greaterThanOrEqualTo(wanted)) throw new InvariantError(`the ${key.currency} credit lots of customer ${key.customer_id} hold less than its balance`);
    return write(key, balance, entry, draws);
  }

  return {
    /**
     * Adds an entry and moves the balance by its amount: credit added is a new lot (with its expiry);
     * credit taken comes from the lots that expire first. A balance that would go below zero is a conflict.
     */
    async append(entry: NewCreditEntry): Promise<CreditEntryRow> {
      const key = keyOf(entry);
      if (toDecimal(entry.amount).isNegative()) return take(key, entry);
      const before = await lockBalance(key);
      const lotId = entry.lotId ?? newId('clt');
      const entryId = newId('cle');
      await db('credit_lots').insert({ id: lotId, ...key, amount: entry.amount, remaining: 0, expires_at: entry.expiresAt ?? null });
      const row = await write(key, before, entry, [{ lotId, amount: entry.amount }], entryId);
      await db('credit_lots').where({ id: lotId }).update({ entry_id: entryId });
      return row;
    },

    /**
     * Takes up to `most` from the customer's balance in `currency` for an invoice: a `consumption` entry of
     * what there was, if anything. Returns the amount taken.
     */
    async consume(entry: Omit<NewCreditEntry, 'kind' | 'amount'> & { most: string }): Promise<string> {
      const key = keyOf(entry);
      const { balance } = await expireDue(key, await lockBalance(key), new Date());
      const taken = Decimal.min(balance, toDecimal(entry.most));
      if (taken.lessThanOrEqualTo(0)) return '0';
      const { most: _most, ...rest } = entry;
      await take(key, { ...rest, kind: 'consumption', amount: taken.negated().toFixed() });
      return taken.toFixed();
    },

    /**
     * Gives an invoice's credit back (an `adjustment` entry) to the lots its entries took it from, so it
     * keeps their expiry; a lot that expired meanwhile expires again at once. Credit taken before lots
     * existed comes back as a lot that never expires.
     */
    async giveBack(entry: Omit<NewCreditEntry, 'kind' | 'expiresAt' | 'lotId'> & { invoiceId: string }): Promise<CreditEntryRow> {
      const key = keyOf(entry);
      const before = await lockBalance(key);
      // The invoice's own takes and give-backs: not the entries of its credit notes, which name it too.
      const entries = await db<CreditEntryRow>('credit_ledger')
        .where({ ...key, invoice_id: entry.invoiceId })
        .whereIn('kind', ['consumption', 'adjustment'])
        .whereNull('credit_note_id')
        .whereNotNull('draws')
        .orderBy([{ column: 'created_at' }, { column: 'id' }]);
      const draws = giveBack(outstanding(entries.map((row) => row.draws ?? [])), entry.amount);
      const rest = toDecimal(entry.amount).minus(draws.reduce((sum, draw) => sum.plus(draw.amount), new Decimal(0)));
      if (rest.greaterThan(0)) {
        const lotId = newId('clt');
        await db('credit_lots').insert({ id: lotId, ...key, amount: rest.toFixed(), remaining: 0 });
        draws.push({ lotId, amount: rest.toFixed() });
      }
      const row = await write(key, before, { ...entry, kind: 'adjustment' }, draws);
      await expireDue(key, toDecimal(row.balance_after), new Date());
      return row;
    },

    /**
     * Expires the lot if `asOf` has reached its expiry and anything is left of it: the `expiry` entry, or
     * nothing (spent, expired already, or never added).
     */
    async expire(organisationId: string, lotId: string, asOf: Date): Promise<CreditEntryRow | undefined> {
      const lot = await db<CreditLotRow>('credit_lots').where({ organisation_id: organisationId, id: lotId }).first();
      if (!lot) return undefined;
      const key = { organisation_id: lot.organisation_id, customer_id: lot.customer_id, currency: lot.currency };
      const { expired } = await expireDue(key, await lockBalance(key), asOf, lotId);
      return expired[0];
    },

    async balances(organisationId: string, customerId: string): Promise<Array<{ currency: string; balance: string }>> {
      return db('credit_balances').where({ organisation_id: organisationId, customer_id: customerId }).orderBy('currency').select('currency', 'balance');
    },

    /** The customer's lots with credit left, in the order credit is taken from them. */
    async openLots(organisationId: string, customerId: string): Promise<CreditLotRow[]> {
      const rows = await db<CreditLotRow>('credit_lots').where({ organisation_id: organisationId, customer_id: customerId }).where('remaining', '>', 0);
      const byId = new Map(rows.map((row) => [row.id, row]));
      return drawOrder(rows.map(asLot)).map((lot) => byId.get(lot.id)!);
    },

    async entries(organisationId: string, customerId: string, filter: { currency?: string }, paging: PageQuery): Promise<Page<CreditEntryRow>> {
      const query = db<CreditEntryRow>('credit_ledger').where({ organisation_id: organisationId, customer_id: customerId }).select('*');
      if (filter.currency) query.where({ currency: filter.currency });
      return paginate<CreditEntryRow, CreditEntryRow>(query, paging, { searchColumns: ['reason'], map: (row) => row });
    },
  };
}

export type CreditRepository = ReturnType<typeof createCreditRepository>;
