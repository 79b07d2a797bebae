import type { Knex } from 'knex';
import { addDays } from '../../domain/billing-periods';
import type { Combination } from '../../domain/dimensional-prices';
import { AppError } from '../../domain/errors';
import { formatAmount, sumAmounts, toDecimal } from '../../domain/money';
import { hasDimensionalPrices, periodUsageWindows, rateDimensionalUsage, rateUsage, type ChargeLedger, type RatedCharge, type UsageWindow } from '../../domain/rating';
import { startOfDayIn } from '../../domain/zoned-days';
import { contractsIn, type Contract } from '../contracts';
import { metersIn, specOf, type MeterAccess } from '../meters';
import { organisationToday } from '../organisation-settings';
import { aggregateUsage } from '../usage';
import { ratedContractPlan, ratingContextOf, type RatedContractPlan } from './rating-context';

/** One usage line of the period so far: a plan item's (or, priced per dimension value, one price entry's) usage and its charge. */
export interface PeriodUsageLine {
  planItemId: string;
  name: string;
  /** The units rated; null where the item's charge states none. */
  quantity: string | null;
  amount: string;
  /** An item priced per dimension value: the values of the price entry. */
  dimensions?: Record<string, string | null>;
}

/** A contract plan's usage charges of its billing period so far, and the ledger's view of them. */
export interface PlanPeriodUsage {
  contractPlanId: string;
  currency: string;
  periodStart: string;
  periodEnd: string;
  lines: PeriodUsageLine[];
  /** The period's usage charges so far, before tax: what its windows rate to, whole. */
  total: string;
  /** What earlier documents already charged for these windows. */
  charged: string;
  /** What an invoice made now would bill for them: the rating engine's difference with the ledger. */
  due: string;
}

/** The contract's period-to-date usage: per contract plan, and summed (every plan bills in the contract's currency). */
export interface PeriodToDateUsage {
  contractId: string;
  currency: string;
  date: string;
  /** The instant the usage was rated at: it counts the events ingested by then. */
  calculatedAt: string;
  total: string;
  charged: string;
  due: string;
  plans: PlanPeriodUsage[];
}

/** A contract plan's period so far as the engine rates it, with the lines an invoice made now would carry. */
export interface RatedPeriod extends PlanPeriodUsage {
  toInvoice: RatedCharge[];
}

type MeterOf = Awaited<ReturnType<MeterAccess['findMany']>>[number];

const NOTHING_CHARGED: ChargeLedger = { fees: [], usage: [] };

/**
 * A window's usage through `at`: the window's days in the organisation's zone, its open end cut at `at`
 * (usage ingested so far), rated whole (`fresh`) and against the ledger (`due`).
 */
async function rateWindow(trx: Knex, organisationId: string, plan: RatedContractPlan, window: UsageWindow, meter: MeterOf, timezone: string, at: Date): Promise<{ fresh: RatedCharge[]; due: RatedCharge[] }> {
  const from = startOfDayIn(window.from, timezone);
  const end = startOfDayIn(addDays(window.to, 1), timezone);
  const to = end < at ? end : at;
  const members = to > from ? plan.entityIds.map((customerEntityId) => ({ customerEntityId, key: 'window', from, to })) : [];
  const query = { organisationId, metric: meter.metric, spec: specOf(meter), members };
  const item = plan.terms.items.find((candidate) => candidate.id === window.planItemId) ?? {};
  if (hasDimensionalPrices(item)) {
    const combinations: Combination[] = (await aggregateUsage(trx, { ...query, dimensions: meter.group_by })).map((group) => ({
      values: Object.fromEntries(meter.group_by.map((key, index) => [key, group.dimensions[index] ?? null])),
      value: group.value,
    }));
    const usage = { groupBy: meter.group_by, aggregation: meter.aggregation, combinations };
    return { fresh: rateDimensionalUsage(plan.terms, window, usage, NOTHING_CHARGED), due: rateDimensionalUsage(plan.terms, window, usage, plan.ledger) };
  }
  const total = toDecimal((await aggregateUsage(trx, query))[0]?.value ?? 0);
  const present = (rated: RatedCharge | null) => (rated ? [rated] : []);
  return { fresh: present(rateUsage(plan.terms, window, total, NOTHING_CHARGED)), due: present(rateUsage(plan.terms, window, total, plan.ledger)) };
}

const amountOf = (rated: readonly RatedCharge[]) => sumAmounts(rated.flatMap((one) => one.charges.map((charge) => charge.amount)));

/**
 * The usage charges of each contract plan's billing period that holds `date`, through the instant `at`,
 * rated by the engine as the period's invoice would rate them, and what the ledger already charged for
 * them. `lock`: read the meters for share (a caller that writes the charges), as invoice runs do. A
 * draft contract bills nothing yet.
 */
export async function ratePeriodToDate(trx: Knex, organisationId: string, contract: Contract, date: string, at: Date, lock?: 'share'): Promise<RatedPeriod[]> {
  if (contract.status === 'draft') return [];
  const context = await ratingContextOf(trx, organisationId, [contract]);
  const periods = contract.plans.flatMap((contractPlan) => {
    const plan = ratedContractPlan(context, contract, contractPlan);
    const current = plan && periodUsageWindows(plan.terms, date);
    return plan && current ? [{ contractPlanId: contractPlan.id, plan, ...current }] : [];
  });
  const meterIds = [...new Set(periods.flatMap((period) => period.windows.map((window) => window.meterId)))];
  const meters = new Map((await metersIn(trx).findMany(organisationId, meterIds, lock)).map((meter) => [meter.id, meter]));
  const rated: RatedPeriod[] = [];
  for (const { contractPlanId, plan, period, windows } of periods) {
    const lines: PeriodUsageLine[] = [];
    const toInvoice: RatedCharge[] = [];
    let charged = toDecimal(0);
    let total = toDecimal(0);
    for (const window of windows) {
      const meter = meters.get(window.meterId);
      if (!meter) throw AppError.conflict(`the meter of plan item ${window.planItemId} no longer exists`);
      const { fresh, due } = await rateWindow(trx, organisationId, plan, window, meter, context.settings.timezone, at);
      const item = plan.terms.items.find((candidate) => candidate.id === window.planItemId)!;
      const dimensional = hasDimensionalPrices(item);
      // One line per charge: an item's window, or one price entry of an item priced per dimension value.
      for (const charge of fresh.flatMap((one) => one.charges)) {
        lines.push({ planItemId: item.id, name: item.name, quantity: charge.quantity, amount: charge.amount, ...(dimensional ? { dimensions: JSON.parse(charge.dimensionsKey ?? '{}') as Record<string, string | null> } : {}) });
      }
      total = total.plus(amountOf(fresh));
      charged = charged.plus(sumAmounts(plan.ledger.usage.filter((usage) => usage.planItemId === window.planItemId && usage.from >= window.from && usage.to <= window.to).map((usage) => usage.amount)));
      toInvoice.push(...due);
    }
    const currency = plan.terms.currency;
    rated.push({ contractPlanId, currency, periodStart: period.from, periodEnd: period.to, lines, total: formatAmount(total, currency), charged: formatAmount(charged, currency), due: formatAmount(amountOf(toInvoice), currency), toInvoice });
  }
  return rated;
}

/**
 * The contract's period-to-date usage charges at the instant `at` (default: now): for each contract plan,
 * the billing period that holds `date` (default: `at`'s day in the organisation's time zone), its usage
 * lines rated through `at`, their pre-tax total, what the ledger already charged and the difference an
 * invoice made now would bill. Read-only. Other modules receive it through a port (spend alerts compare
 * `total`, in the contract's currency, with their thresholds).
 */
export async function periodToDateUsage(db: Knex, organisationId: string, contractId: string, at: Date = new Date(), date?: string): Promise<PeriodToDateUsage> {
  const contract = (await contractsIn(db).findMany(organisationId, [contractId]))[0];
  if (!contract) throw AppError.notFound('Contract');
  const day = date ?? (await organisationToday(db, organisationId, undefined, at));
  const plans = (await ratePeriodToDate(db, organisationId, contract, day, at)).map(({ toInvoice: _toInvoice, ...plan }) => plan);
  const sum = (field: 'total' | 'charged' | 'due') => formatAmount(sumAmounts(plans.map((plan) => plan[field])), contract.currency);
  return { contractId, currency: contract.currency, date: day, calculatedAt: at.toISOString(), total: sum('total'), charged: sum('charged'), due: sum('due'), plans };
}
