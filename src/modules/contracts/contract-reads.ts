import type { Knex } from 'knex';
import { orNotFound } from '../../domain/errors';
import type { PlanUse } from '../billing-plans';
import type { CustomerUse } from '../customers';
import { createContractRepository } from './contracts.repository';

/** The use contracts and their milestones make of billing plans, which the billing-plans module asks of. */
export const contractPlanUse: PlanUse = {
  planInUse: (db, organisationId, planId) => createContractRepository(db).planInUse(organisationId, planId),
  planItemInUse: (db, organisationId, planItemId) => createContractRepository(db).planItemInUse(organisationId, planItemId),
};

/** The use contracts make of their customer, which the customers module asks of before a deletion. */
export const contractCustomerUse: CustomerUse = {
  openContractsOf: (db, organisationId, customerId) => createContractRepository(db).openOfCustomer(organisationId, customerId),
};

/** The currency of the organisation's contract; a 404 when it has none of that id. */
export async function contractCurrency(db: Knex, organisationId: string, contractId: string): Promise<string> {
  return orNotFound(await createContractRepository(db).find(organisationId, contractId), 'Contract').currency;
}
