import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createCustomerBody, customerSchema, updateCustomerBody } from './customers.schemas';

export function customerRoutes(deps: AppDeps): Route[] {
  const { customers } = deps.services;

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
      handler: async ({ body, auth }) => customers.create(auth.organisationId, body),
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
      handler: async ({ params, auth }) => customers.getById(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'patch',
      path: '/customers/{id}',
      summary: "Change a customer's name, e-mail, externalId, payment terms, locale or time zone (Admin only); null clears a field",
      tag: 'Customers',
      access: requires('CustomerService:updateCustomer'),
      params: idParam,
      body: updateCustomerBody,
      response: customerSchema,
      handler: async ({ params, body, auth }) => customers.update(auth.organisationId, params.id, body),
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
        await customers.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
