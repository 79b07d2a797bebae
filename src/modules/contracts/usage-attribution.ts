import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { earlierEnd } from '../../domain/billing-periods';
import { AppError } from '../../domain/errors';
import { plansIn } from '../billing-plans';
import { entitiesIn } from '../customers';
import { createContractRepository } from './contracts.repository';

/** One contract plan as far as its usage goes: its days, its meters and the entities it bills. */
interface UsagePlan {
  id: string;
  contractId: string;
  from: string;
  to: string | null;
  meters: Set<string>;
  entities: Set<string>;
}

const later = (a: string, b: string) => (a > b ? a : b);

/** The two-key advisory lock namespace of a customer's usage attribution checks. */
const USAGE_ATTRIBUTION_LOCK = 7311;

/**
 * Usage belongs to one contract plan: two plans of the customer that bill usage (contracts active or
 * suspended, and the plans of `contractId` itself) may not bill the same entity's usage of one meter on the
 * same day. Checked, under the contract's row lock, when a contract is activated (`plans`: all of its own),
 * a plan change adds a plan (`plans`: the new one), or an open contract's end moves later (`plans`: all of
 * its own). 409 names the plan already billing that usage. The check holds the customer's lock until the
 * transaction ends, so that two contracts of one customer are never checked at once, each blind to the
 * other's change.
 */
export async function assertUsageUnshared(trx: Knex, organisationId: string, contractId: string, planIds: readonly string[]): Promise<void> {
  const contracts = createContractRepository(trx);
  const contract = (await contracts.find(organisationId, contractId))!;
  await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [USAGE_ATTRIBUTION_LOCK, contract.customerId]);
  const rows = await contracts.usagePlansOf(organisationId, contract.customerId, contractId);
  const billingPlans = new Map((await plansIn(trx).findMany(organisationId, [...new Set(rows.map((row) => row.plan_id))])).map((plan) => [plan.id, plan]));
  const allEntities = await entitiesIn(trx).customerEntityIds(organisationId, contract.customerId);
  const plans: UsagePlan[] = rows.map((row) => ({
    id: row.id,
    contractId: row.contract_id,
    from: calendarDay(row.start_date),
    to: earlierEnd(row.end_date ? calendarDay(row.end_date) : null, row.contract_end_date ? calendarDay(row.contract_end_date) : null),
    meters: new Set((billingPlans.get(row.plan_id)?.items ?? []).flatMap((item) => (item.meterId ? [item.meterId] : []))),
    entities: new Set(row.customer_entity_ids ?? allEntities),
  }));
  const candidates = plans.filter((plan) => planIds.includes(plan.id));
  for (const candidate of candidates) {
    for (const other of plans) {
      if (other.id === candidate.id || (candidates.includes(other) && other.id < candidate.id)) continue;
      const from = later(candidate.from, other.from);
      const to = earlierEnd(candidate.to, other.to);
      if (to !== null && to < from) continue;
      const meter = [...candidate.meters].find((id) => other.meters.has(id));
      const entity = [...candidate.entities].find((id) => other.entities.has(id));
      if (meter === undefined || entity === undefined) continue;
      throw AppError.conflict(
        `contract plan ${other.id} of contract ${other.contractId} bills the usage of meter ${meter} for customer entity ${entity} from ${from}: give the contract plans customerEntityIds that do not overlap`,
      );
    }
  }
}
