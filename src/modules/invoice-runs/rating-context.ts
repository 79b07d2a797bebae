import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { earlierEnd, type Suspension } from '../../domain/billing-periods';
import type { ChargeLedger, RatedItem, RatingTerms } from '../../domain/rating';
import { plansIn } from '../billing-plans';
import { chargesIn, ledgerOf } from '../charges';
import { contractsIn, type Contract } from '../contracts';
import { notedLinesOf } from '../credit-notes';
import { invoicesIn } from '../invoices';
import { entitiesIn } from '../customers';
import { getOrganisationSettings } from '../organisation-settings';

export function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const values = map.get(key);
  if (values) values.push(value);
  else map.set(key, [value]);
}

export function groupBy<T, K, V>(rows: readonly T[], keyOf: (row: T) => K, valueOf: (row: T) => V): Map<K, V[]> {
  const groups = new Map<K, V[]>();
  for (const row of rows) push(groups, keyOf(row), valueOf(row));
  return groups;
}

/**
 * What the rating engine needs of a set of contracts besides their usage, read once for all of them (one
 * read of each kind): suspensions, the customers' entities, the plans and their period versions, the
 * charge ledger with the coupon discount lines on its documents, the organisation's settings and the items
 * billed by milestones.
 */
export async function ratingContextOf(trx: Knex, organisationId: string, contracts: readonly Contract[], options: { withoutInvoiceId?: string } = {}) {
  const suspensions = groupBy(
    await contractsIn(trx).suspensionsOf(contracts.map((contract) => contract.id)),
    (row) => row.contract_id,
    (row): Suspension => ({ from: calendarDay(row.from_date), to: row.to_date ? calendarDay(row.to_date) : null }),
  );
  const customerIds = [...new Set(contracts.map((contract) => contract.customerId))];
  const entities = groupBy(await entitiesIn(trx).customerEntitiesOf(organisationId, customerIds), (row) => row.customer_id, (row) => row.id);
  const contractPlans = contracts.flatMap((contract) => contract.plans);
  const planIds = [...new Set(contractPlans.map((plan) => plan.planId))];
  const plans = new Map((await plansIn(trx).findMany(organisationId, planIds)).map((plan) => [plan.id, plan]));
  const periodVersions = await plansIn(trx).periodsOf(planIds);
  const charges = (await chargesIn(trx).of(contractPlans.map((plan) => plan.id))).filter((charge) => charge.invoiceId !== options.withoutInvoiceId);
  const ledgers = groupBy(charges, (charge) => charge.contractPlanId, (charge) => charge);
  // What credit notes gave back of the usage lines: a correction gives back no more than a window still holds.
  const usageInvoiceIds = [...new Set(charges.filter((charge) => charge.kind === 'usage').map((charge) => charge.invoiceId))];
  const noted = groupBy(await notedLinesOf(trx, usageInvoiceIds), (line) => line.invoiceId, (line) => line);
  const cancelled = await invoicesIn(trx).cancelledAmong(usageInvoiceIds);
  // The coupons' discount lines on the documents the ledger holds: the periods each coupon served. Coupons
  // discount a period's own invoice, never a progressive one: what those billed is no period's billing.
  const chargedBy = [...new Set(charges.map((charge) => charge.invoiceId))];
  const couponLines = groupBy(await invoicesIn(trx).couponLinesAmong(chargedBy), (line) => line.invoice_id, (line) => line);
  const progressive = await invoicesIn(trx).progressiveAmong(chargedBy);
  // Usage windows are days of its zone: a change of the zone waits until these charges are committed.
  const settings = await getOrganisationSettings(trx, organisationId, 'keyShare');
  // An item with milestones on a contract plan is billed by its milestones there, never by a run as well.
  const byMilestones = new Set((await contractsIn(trx).milestoneItemsOf(contractPlans.map((plan) => plan.id))).map((row) => `${row.contract_plan_id} ${row.plan_item_id}`));
  return { suspensions, entities, plans, periodVersions, ledgers, noted, cancelled, couponLines, progressive, settings, byMilestones };
}

export type RatingContext = Awaited<ReturnType<typeof ratingContextOf>>;

/** A contract plan as the rating engine sees it: its terms, its ledger and the entities whose usage it bills. */
export interface RatedContractPlan {
  terms: RatingTerms;
  ledger: ChargeLedger;
  entityIds: readonly string[];
}

/** The contract plan's ledger, with what credit notes gave back of its invoices' lines. */
function ledgerOfPlan(context: RatingContext, contractPlanId: string): ChargeLedger {
  const charges = context.ledgers.get(contractPlanId) ?? [];
  const invoiceIds = new Set(charges.map((charge) => charge.invoiceId));
  return ledgerOf(
    charges,
    [...invoiceIds].flatMap((invoiceId) => context.noted.get(invoiceId) ?? []),
    context.cancelled,
  );
}

/** A contract plan's terms, ledger and entities from the context; null when its billing plan is gone. */
export function ratedContractPlan(context: RatingContext, contract: Contract, contractPlan: Contract['plans'][number]): RatedContractPlan | null {
  const billingPlan = context.plans.get(contractPlan.planId);
  if (!billingPlan) return null;
  return {
    // A terminated or ended contract's end date is its last day served (the contract lifecycle moves it up).
    terms: {
      currency: contract.currency,
      anchor: contract.billingAnchor,
      startDate: contractPlan.startDate,
      endDate: earlierEnd(contractPlan.endDate, contract.endDate),
      periods: context.periodVersions.get(billingPlan.id) ?? [],
      items: (billingPlan.items as unknown as RatedItem[]).filter((item) => !context.byMilestones.has(`${contractPlan.id} ${item.id}`)),
      suspensions: context.suspensions.get(contract.id) ?? [],
    },
    ledger: ledgerOfPlan(context, contractPlan.id),
    entityIds: contractPlan.customerEntityIds ?? context.entities.get(contract.customerId) ?? [],
  };
}
