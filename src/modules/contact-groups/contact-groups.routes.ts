import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { contactGroupListQuery, contactGroupSchema, createContactGroupBody } from './contact-groups.schemas';

export function contactGroupRoutes(deps: AppDeps): Route[] {
  const service = deps.services.contactGroups;

  return [
    defineRoute({
      method: 'post',
      path: '/contact-groups',
      summary: "Create a contact group for a customer; invoices are sent to a contract's groups",
      tag: 'Contact groups',
      access: requires('ContactGroupService:createContactGroup'),
      body: createContactGroupBody,
      response: contactGroupSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => service.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/contact-groups',
      summary: "List contact groups, optionally one customer's; search matches the group name",
      tag: 'Contact groups',
      access: requires('ContactGroupService:getContactGroups'),
      query: contactGroupListQuery,
      response: pageOf(contactGroupSchema),
      handler: async ({ query, auth }) => service.list(auth.organisationId, query, { customerId: query.customerId }),
    }),
    defineRoute({
      method: 'get',
      path: '/contact-groups/{id}',
      summary: 'Read a contact group with its contacts',
      tag: 'Contact groups',
      access: requires('ContactGroupService:getContactGroupById'),
      params: idParam,
      response: contactGroupSchema,
      handler: async ({ params, auth }) => service.getById(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'delete',
      path: '/contact-groups/{id}',
      summary: 'Delete a contact group and all of its contacts',
      tag: 'Contact groups',
      access: requires('ContactGroupService:deleteContactGroup'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await service.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
