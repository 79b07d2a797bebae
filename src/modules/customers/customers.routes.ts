import { AppError } from '../../domain/errors';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import { isUniqueViolation } from '../../db/knex';
import type { AppDeps } from '../../deps';
import { CUSTOMER_EXTERNAL_ID_UNIQUE, createCustomerRepository, toCustomer } from './customers.repository';
import { createCustomerBody, customerSchema } from './customers.schemas';

export function customerRoutes(deps: AppDeps): Route[] {
  const customers = createCustomerRepository(deps.db);

  const duplicateExternalId = (error: unknown): never => {
    if (isUniqueViolation(error, CUSTOMER_EXTERNAL_ID_UNIQUE)) throw AppError.conflict('A customer with this externalId exists');
    throw error;
  };

  return [
    defineRoute({
      method: 'post',
      path: '/customers',
      summary: 'Create a customer',
      tag: 'Customers',
      access: requires('CustomerService:createCustomer'),
      body: createCustomerBody,
      response: customerSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => toCustomer(await customers.create(auth.organisationId, body).catch(duplicateExternalId)),
    }),
    defineRoute({
      method: 'get',
      path: '/customers',
      summary: 'List customers; search matches name, email or externalId',
      tag: 'Customers',
      access: requires('CustomerService:getCustomers'),
      query: pageQuery,
      response: pageOf(customerSchema),
      handler: async ({ query, auth }) => customers.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/customers/{id}',
      summary: 'Read a customer',
      tag: 'Customers',
      access: requires('CustomerService:getCustomerById'),
      params: idParam,
      response: customerSchema,
      handler: async ({ params, auth }) => {
        const row = await customers.findById(auth.organisationId, params.id);
        if (!row) throw AppError.notFound('Customer');
        return toCustomer(row);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/customers/{id}',
      summary: 'Delete a customer and its entities (Admin only); they are kept for history but vanish from every read',
      tag: 'Customers',
      access: requires('CustomerService:deleteCustomer'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        if (!(await customers.softDelete(auth.organisationId, params.id))) throw AppError.notFound('Customer');
        return deleted(params.id);
      },
    }),
  ];
}
