import type { Knex } from 'knex';
import { createBillingPlanRepository } from './billing-plans.repository';

export { createBillingPlanService } from './billing-plans.service';
export type { PlanUse } from './billing-plans.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type PlanAccess = Pick<ReturnType<typeof createBillingPlanRepository>, 'currencies' | 'dimensionalItemsOfMeter' | 'existingItemIds' | 'find' | 'findItem' | 'findMany' | 'itemBelongs' | 'itemIdsAmong' | 'itemIdsOfMeter' | 'periodsOf'>;
export const plansIn = (db: Knex): PlanAccess => createBillingPlanRepository(db);
