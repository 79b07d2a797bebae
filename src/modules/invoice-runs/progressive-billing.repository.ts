import type { Knex } from 'knex';
import { Decimal } from '../../domain/money';

/** A progressive billing threshold claimed for a contract's billing period, by the invoice that billed its crossing. */
export interface ProgressiveClaim {
  contractId: string;
  organisationId: string;
  periodStart: string;
  threshold: string;
  invoiceId: string | null;
  usageTotal: string;
}

/** The claims table (`progressive_billing_claims`): one row per contract, period and threshold crossed. */
export function createProgressiveClaimRepository(db: Knex) {
  return {
    /** The thresholds already claimed for the contract's period, as decimals (the column pads them to 4 places). */
    async claimed(contractId: string, periodStart: string): Promise<Decimal[]> {
      const thresholds = await db('progressive_billing_claims').where({ contract_id: contractId, period_start: periodStart }).pluck<string[]>('threshold');
      return thresholds.map((threshold) => new Decimal(threshold));
    },

    /**
     * Claims the thresholds, in the transaction of the invoice that bills them. The primary key refuses a
     * threshold claimed twice for a period: a unique violation, which rolls the invoice back with it.
     */
    async claim(claims: readonly ProgressiveClaim[]): Promise<void> {
      if (claims.length === 0) return;
      await db('progressive_billing_claims').insert(
        claims.map((claim) => ({
          contract_id: claim.contractId,
          organisation_id: claim.organisationId,
          period_start: claim.periodStart,
          threshold: claim.threshold,
          invoice_id: claim.invoiceId,
          usage_total: claim.usageTotal,
        })),
      );
    },
  };
}
