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

export function createCustomerService(db: Knex) {
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

    /** The customer's entities go with it, so usage can no longer be recorded against a deleted customer. */
    async delete(organisationId: string, id: string): Promise<void> {
      await db.transaction(async (trx) => {
        if (!(await createCustomerRepository(trx).softDelete(organisationId, id))) throw AppError.notFound('Customer');
        await createEntityRepository(trx).softDeleteOfCustomer(organisationId, id);
      });
    },
  };
}

export type CustomerService = ReturnType<typeof createCustomerService>;
