import type { Knex } from 'knex';
import { currencyMinorUnits } from '../../domain/currencies';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount, hasAtMostMinorUnits } from '../../domain/money';
import type { PageQuery } from '../../http/paging';
import { createCustomerRepository } from '../customers/customers.repository';
import { createWebhookRepository } from '../webhooks/webhooks.repository';
import { createCreditRepository, type CreditEntryRow } from './credits.repository';
import type { AddCreditsBody, CreditEntry, Credits } from './credits.schemas';

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
    createdAt: row.created_at.toISOString(),
  };
}

/** A customer's credit balances and their ledger. */
export function createCreditService(deps: { db: Knex }) {
  const { db } = deps;

  async function requireCustomer(organisationId: string, customerId: string): Promise<void> {
    orNotFound(await createCustomerRepository(db).findById(organisationId, customerId), 'Customer');
  }

  return {
    async get(organisationId: string, customerId: string, filter: { currency?: string }, paging: PageQuery): Promise<Credits> {
      await requireCustomer(organisationId, customerId);
      const credits = createCreditRepository(db);
      const balances = await credits.balances(organisationId, customerId);
      const ledger = await credits.entries(organisationId, customerId, filter, paging);
      return {
        customerId,
        balances: balances.map((row) => ({ currency: row.currency, balance: formatAmount(row.balance, row.currency) })),
        ledger: { ...ledger, items: ledger.items.map(toCreditEntry) },
      };
    },

    /** A grant or a paid purchase: one ledger entry, and `credits.granted` in the same transaction. */
    async add(organisationId: string, customerId: string, input: AddCreditsBody): Promise<CreditEntry> {
      if (!hasAtMostMinorUnits(input.amount, input.currency)) {
        throw AppError.validation(`${input.currency} amounts carry at most ${currencyMinorUnits(input.currency)} decimal places`, 'body.amount');
      }
      return db.transaction(async (trx) => {
        orNotFound(await createCustomerRepository(trx).findById(organisationId, customerId), 'Customer');
        const row = await createCreditRepository(trx).append({ organisationId, customerId, currency: input.currency, kind: input.kind, amount: input.amount, reason: input.reason });
        const entry = toCreditEntry(row);
        await createWebhookRepository(trx).emit(organisationId, 'credits.granted', { customerId, ...entry });
        return entry;
      });
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;
