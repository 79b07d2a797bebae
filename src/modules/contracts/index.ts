import type { Knex } from 'knex';
import { createContractRepository } from './contracts.repository';
import { createPlanChangeRepository } from './plan-changes.repository';

export { contractCurrency, contractCustomerUse, contractPlanUse } from './contract-reads';
export { contractTaxesOf, contractTaxesOfMany, resolveContractPlan, taxesInForce } from './contract-plans.repository';
export type { ContractPlanRef, ContractTax } from './contract-plans.repository';
export type { Contract, MilestoneToInvoice, ProgressiveBilling } from './contracts.repository';
export { contractSchema } from './contracts.schemas';
export { createContractService } from './contracts.service';
export type { ContractService } from './contracts.service';
export { toPlanChange } from './plan-changes.repository';
export type { PlanChange, PlanChangeCredit, PlanChangeRow } from './plan-changes.repository';
export { assertUsageUnshared } from './usage-attribution';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type ContractAccess = Pick<ReturnType<typeof createContractRepository>, 'activeIdsOf' | 'addPlan' | 'billableIds' | 'closeSuspension' | 'deletePlan' | 'endBy' | 'find' | 'findMany' | 'lockMany' | 'lockMilestone' | 'lockStatus' | 'markMilestoneAchieved' | 'markResumed' | 'milestone' | 'milestoneItemsOf' | 'openSuspension' | 'planHasMilestones' | 'progressiveOf' | 'setPlanEnd' | 'setStatus' | 'suspensionsOf' | 'wasResumed'>;
export const contractsIn = (db: Knex): ContractAccess => createContractRepository(db);

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type PlanChangeAccess = Pick<ReturnType<typeof createPlanChangeRepository>, 'creditingItemsSince' | 'creditsOnInvoice' | 'find' | 'insert' | 'latestStanding' | 'lock' | 'markUndone' | 'pendingOf' | 'settle' | 'standingFrom'>;
export const planChangesIn = (db: Knex): PlanChangeAccess => createPlanChangeRepository(db);
