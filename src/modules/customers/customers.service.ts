import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { createEntityRepository } from './entities.repository';
import { CUSTOMER_EXTERNAL_ID_UNIQUE, createCustomerRepository, toCustomer, type Customer } from './customers.repository';
import type { CreateCustomerBody, UpdateCustomerBody } from './customers.schemas';

const duplicateExternalId = (error: unknown): never => {
  if (isUniqueViolation(error, CUSTOMER_EXTERNAL_ID_UNIQUE)) throw AppError.conflict('A customer with this externalId exists');
  throw error;
};

/**
 * What the contracts of a customer say of its deletion: the customer service asks, the composition root
 * answers with the contracts module's face. `db` is the caller's transaction.
 */
export interface CustomerUse {
  /** The customer's contracts that are not ended or terminated, with their status. */
  openContractsOf(db: Knex, organisationId: string, customerId: string): Promise<Array<{ id: string; status: string }>>;
}

export function createCustomerService(db: Knex, use: CustomerUse) {
  const customers = createCustomerRepository(db);

  return {
    async create(organisationId: string, input: CreateCustomerBody): Promise<Customer> {
      return toCustomer(await customers.create(organisationId, input).catch(duplicateExternalId));
    },

    async getById(organisationId: string, id: string): Promise<Customer> {
      return toCustomer(orNotFound(await customers.findById(organisationId, id), 'Customer'));
    },

    async update(organisationId: string, id: string, input: UpdateCustomerBody): Promise<Customer> {
      return toCustomer(orNotFound(await customers.update(organisationId, id, input).catch(duplicateExternalId), 'Customer'));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Customer>> {
      return customers.list(organisationId, paging);
    },

    /**
     * The customer's entities go with it, so usage can no longer be recorded against a deleted customer.
     * Refused (409) while a contract of the customer is not ended or terminated: it would go on billing a
     * customer that is gone. The delete holds the customer's row first, so a contract created meanwhile
     * (which holds it shared) is either seen here or never made.
     */
    async delete(organisationId: string, id: string): Promise<void> {
      await db.transaction(async (trx) => {
        if (!(await createCustomerRepository(trx).softDelete(organisationId, id))) throw AppError.notFound('Customer');
        const open = await use.openContractsOf(trx, organisationId, id);
        if (open.length > 0) {
          const named = open.slice(0, 5).map((contract) => `${contract.id} (${contract.status})`).join(', ');
          throw AppError.conflict(`the customer has contracts that are not ended: ${named}${open.length > 5 ? ` and ${open.length - 5} more` : ''}; end or terminate them first`);
        }
        await createEntityRepository(trx).softDeleteOfCustomer(organisationId, id);
      });
    },
  };
}

export type CustomerService = ReturnType<typeof createCustomerService>;
