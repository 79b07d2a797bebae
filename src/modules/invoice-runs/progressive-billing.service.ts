import type { Knex } from 'knex';
import { AppError, InvariantError } from '../../domain/errors';
import type { UsageCorrected, UsageIngested } from '../../domain/events';
import { Decimal, formatAmount, sumAmounts } from '../../domain/money';
import type { OutboxEvent } from '../../events/outbox';
import { chargesIn } from '../charges';
import { contractsIn } from '../contracts';
import { findEffectiveRate } from '../fx-rates';
import { invoicesIn } from '../invoices';
import { getOrganisationSettings, organisationToday } from '../organisation-settings';
import { ratePeriodToDate, type RatedPeriod } from './period-usage';
import { createProgressiveClaimRepository } from './progressive-billing.repository';

/** A contract whose usage may have crossed a progressive billing threshold. */
export interface ProgressiveCheck {
  organisationId: string;
  contractId: string;
}

/** What a check billed: the invoices it made (none when no new threshold was crossed) and the thresholds they claim. */
export interface ProgressiveOutcome {
  invoiceIds: string[];
  thresholds: string[];
  periodStart: string | null;
}

const NOTHING: ProgressiveOutcome = { invoiceIds: [], thresholds: [], periodStart: null };

/** A plan's invoice lines, dated from its earliest to its latest. */
function draftOf(period: RatedPeriod) {
  const items = period.toInvoice.map((rated) => rated.line);
  const fromDate = items.map((line) => line.fromDate).reduce((a, b) => (b < a ? b : a));
  const toDate = items.map((line) => line.toDate).reduce((a, b) => (b > a ? b : a));
  return { items, fromDate, toDate };
}

/**
 * Progressive billing: when a contract's usage charges of its current billing period (before tax, every
 * contract plan together) cross one of its thresholds, an invoice is made at once for what the period's
 * usage rates to so far less what the ledger already charged (the `due` of period-to-date usage). The
 * period's own invoice, made by a run once it ends, bills the rest through the ledger's deltas.
 */
export function createProgressiveBillingService(db: Knex) {
  return {
    /**
     * The active contracts with thresholds of the customers whose usage the batch's `usage.ingested`
     * events announce: one statement for the whole relay batch. Inside the relay's transaction.
     */
    async contractsToCheck(trx: Knex, events: readonly OutboxEvent[]): Promise<ProgressiveCheck[]> {
      const customers = new Map<string, { organisationId: string; customerId: string }>();
      for (const event of events) {
        if (event.type !== 'usage.ingested' && event.type !== 'usage.corrected') continue;
        for (const customerId of (event.payload.data as UsageIngested | UsageCorrected).customerIds) customers.set(`${event.organisation_id} ${customerId}`, { organisationId: event.organisation_id, customerId });
      }
      const contracts = await contractsIn(trx).progressiveOf([...customers.values()]);
      return contracts.map((contract) => ({ organisationId: contract.organisation_id, contractId: contract.id }));
    },

    /**
     * Checks the contract and bills the thresholds its period's usage crossed and no earlier invoice
     * claimed: one draft per contract plan with something due, their charges and the claims of every
     * threshold crossed, in one transaction under the contract's row lock, so that a threshold is billed
     * once per period however many checks run at once or again.
     */
    async bill(check: ProgressiveCheck, at: Date = new Date()): Promise<ProgressiveOutcome> {
      return db.transaction(async (trx) => {
        await contractsIn(trx).lockMany(check.organisationId, [check.contractId]);
        const contract = (await contractsIn(trx).findMany(check.organisationId, [check.contractId]))[0];
        if (!contract || contract.status !== 'active' || !contract.progressiveBilling) return NOTHING;
        const date = await organisationToday(trx, check.organisationId, undefined, at);
        const periods = await ratePeriodToDate(trx, check.organisationId, contract, date, at, 'share');
        if (periods.length === 0) return NOTHING;
        // Plans of one contract share its anchor; where their periods differ, the earliest start names the period.
        const periodStart = periods.map((period) => period.periodStart).reduce((a, b) => (b < a ? b : a));
        const total = sumAmounts(periods.map((period) => period.total));
        const claims = createProgressiveClaimRepository(trx);
        const claimed = await claims.claimed(contract.id, periodStart);
        const crossed = contract.progressiveBilling.thresholds.filter((threshold) => total.gte(threshold) && !claimed.some((taken) => taken.eq(threshold)));
        if (crossed.length === 0) return NOTHING;

        const billed = periods.filter((period) => period.toInvoice.length > 0 && !new Decimal(period.due).isZero());
        const settings = await getOrganisationSettings(trx, check.organisationId);
        if (billed.length > 0 && contract.currency !== settings.base_currency && !(await findEffectiveRate(trx, check.organisationId, contract.currency, settings.base_currency, date))) {
          throw AppError.missingFxRate(contract.currency, settings.base_currency, date);
        }
        const origin = { progressiveBilling: { periodStart, thresholds: crossed, usageTotal: formatAmount(total, contract.currency) } };
        const invoiceIds = await invoicesIn(trx).createMany(
          billed.map((period) => ({
            organisationId: check.organisationId,
            customerId: contract.customerId,
            contractId: contract.id,
            contractPlanId: period.contractPlanId,
            currency: contract.currency,
            date,
            ...draftOf(period),
            data: origin,
          })),
        );
        const charges = billed.flatMap((period, index) => period.toInvoice.flatMap((rated) => rated.charges.map((charge) => ({ ...charge, contractId: contract.id, contractPlanId: period.contractPlanId, invoiceId: invoiceIds[index]! }))));
        // Usage charges are never refused; a count that differs is a bug, and rolls back.
        if ((await chargesIn(trx).record(check.organisationId, null, charges)) !== charges.length) throw new InvariantError('a progressive invoice charge was not recorded');
        await claims.claim(crossed.map((threshold) => ({ contractId: contract.id, organisationId: check.organisationId, periodStart, threshold, invoiceId: invoiceIds[0] ?? null, usageTotal: total.toFixed() })));
        return { invoiceIds, thresholds: crossed, periodStart };
      });
    },
  };
}

export type ProgressiveBillingService = ReturnType<typeof createProgressiveBillingService>;
