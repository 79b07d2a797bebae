import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { currencyMinorUnits } from '../../domain/currencies';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount, hasAtMostMinorUnits, toDecimal } from '../../domain/money';
import { newId } from '../../db/ids';
import type { PageQuery } from '../../http/paging';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { creditExpiryWorkflowId, searchAttributes } from '../../../workflows/ids';
import { customersIn } from '../customers';
import { createCreditRepository, toCreditEntry } from './credits.repository';
import type { AddCreditsBody, CreditEntry, Credits } from './credits.schemas';

export interface ExpireLotInput {
  organisationId: string;
  lotId: string;
  /** The expiry the timer waited for (ISO instant): the lot expires if it is due by then. */
  asOf: string;
}

/** A customer's credit balances, their lots and their ledger. */
export function createCreditService(deps: { db: Knex }) {
  const { db } = deps;

  async function requireCustomer(organisationId: string, customerId: string): Promise<void> {
    orNotFound(await customersIn(db).findById(organisationId, customerId), 'Customer');
  }

  return {
    async get(organisationId: string, customerId: string, filter: { currency?: string }, paging: PageQuery): Promise<Credits> {
      await requireCustomer(organisationId, customerId);
      const credits = createCreditRepository(db);
      const balances = await credits.balances(organisationId, customerId);
      const lots = await credits.openLots(organisationId, customerId);
      const ledger = await credits.entries(organisationId, customerId, filter, paging);
      return {
        customerId,
        balances: balances.map((row) => ({ currency: row.currency, balance: formatAmount(row.balance, row.currency) })),
        lots: lots
          .filter((lot) => !filter.currency || lot.currency === filter.currency)
          .map((lot) => ({ id: lot.id, currency: lot.currency, amount: formatAmount(lot.amount, lot.currency), remaining: formatAmount(lot.remaining, lot.currency), expiresAt: lot.expires_at?.toISOString() ?? null })),
        ledger: { ...ledger, items: ledger.items.map(toCreditEntry) },
      };
    },

    /**
     * A grant or a paid purchase: one ledger entry and its lot, and `credits.granted`, in one transaction.
     * `lotId`: the lot's id, when its expiry was scheduled before.
     */
    async add(organisationId: string, customerId: string, input: AddCreditsBody, lotId?: string): Promise<CreditEntry> {
      if (!hasAtMostMinorUnits(input.amount, input.currency)) {
        throw AppError.validation(`${input.currency} amounts carry at most ${currencyMinorUnits(input.currency)} decimal places`, 'body.amount');
      }
      return db.transaction(async (trx) => {
        orNotFound(await customersIn(trx).findById(organisationId, customerId), 'Customer');
        const row = await createCreditRepository(trx).append({
          organisationId,
          customerId,
          currency: input.currency,
          kind: input.kind,
          amount: input.amount,
          reason: input.reason,
          expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
          lotId,
        });
        const entry = toCreditEntry(row);
        await recordEvent(trx, organisationId, domainEvent('credits.granted', { customerId, ...entry }));
        return entry;
      });
    },

    /** The step of a lot's expiry timer: what is left of it expires, with `credits.expired`. */
    async expireLot(input: ExpireLotInput): Promise<{ expired: string }> {
      return db.transaction(async (trx) => {
        const entry = await createCreditRepository(trx).expire(input.organisationId, input.lotId, new Date(input.asOf));
        if (!entry) return { expired: '0' };
        return { expired: formatAmount(toDecimal(entry.amount).negated(), entry.currency) };
      });
    },
  };
}

export type CreditService = ReturnType<typeof createCreditService>;

/**
 * Adding credit through the API: credit that expires has its timer started first (a workflow per lot,
 * whose id the lot takes), so that a grant is never stored without the timer that will expire it. With
 * Temporal away that is a 503 and nothing is stored; a timer whose grant was then not stored finds no lot
 * and does nothing.
 */
export function createCreditGrantService(deps: WorkflowServiceDeps & { credits: CreditService }) {
  const { workflows } = deps.temporal;
  return {
    async add(organisationId: string, customerId: string, input: AddCreditsBody): Promise<CreditEntry> {
      if (!input.expiresAt) return deps.credits.add(organisationId, customerId, input);
      // A minute ahead at least, so that the timer cannot fire before the grant is stored.
      if (Date.parse(input.expiresAt) < Date.now() + 60_000) throw AppError.validation('must be at least a minute ahead', 'body.expiresAt');
      orNotFound(await customersIn(deps.db).findById(organisationId, customerId), 'Customer');
      const lotId = newId('clt');
      await deps.temporal.bounded(() =>
        workflows.start('creditExpiryWorkflow', {
          workflowId: creditExpiryWorkflowId(lotId),
          args: [{ organisationId, lotId, expiresAt: new Date(input.expiresAt!).toISOString() }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          ...searchAttributes({ organisationId, customerId }),
        }),
      );
      return deps.credits.add(organisationId, customerId, input, lotId);
    },
  };
}

export type CreditGrantService = ReturnType<typeof createCreditGrantService>;
