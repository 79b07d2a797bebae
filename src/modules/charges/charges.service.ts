import type { Knex } from 'knex';
import { formatAmount, formatExactOrNull } from '../../domain/money';
import type { Page, PageQuery } from '../../http/paging';
import { createChargeRepository, type ChargeRow } from './charges.repository';

/** A charge as the API shows it: amounts in the contract's currency, units exact. */
function toView(charge: ChargeRow, currency: string) {
  return {
    id: charge.id,
    contractPlanId: charge.contractPlanId,
    planItemId: charge.planItemId,
    kind: charge.kind,
    fromDate: charge.from,
    toDate: charge.to,
    periodFrom: charge.periodFrom,
    periodTo: charge.periodTo,
    quantity: formatExactOrNull(charge.quantity),
    amount: formatAmount(charge.amount, currency),
    discount: formatAmount(charge.discount, currency),
    tax: charge.tax === null ? null : formatAmount(charge.tax, currency),
    invoiceId: charge.invoiceId,
    dimensions: charge.dimensionsKey === null ? null : (JSON.parse(charge.dimensionsKey) as Record<string, string | null>),
  };
}

export type ChargeView = ReturnType<typeof toView>;

/** The currency of the organisation's contract, or a 404: the contracts module answers it. */
export type ContractCurrency = (organisationId: string, contractId: string) => Promise<string>;

/** Reading the charge ledger: what each document charged, for which days, at what net and tax. */
export function createChargeService(db: Knex, currencyOf: ContractCurrency) {
  return {
    async listForContract(organisationId: string, contractId: string, paging: PageQuery): Promise<Page<ChargeView>> {
      const currency = await currencyOf(organisationId, contractId);
      const page = await createChargeRepository(db).page(contractId, paging);
      return { ...page, items: page.items.map((charge) => toView(charge, currency)) };
    },
  };
}

export type ChargeService = ReturnType<typeof createChargeService>;
