import { pageOf } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createEntityBody, entityListQuery, entitySchema, identifierQuery } from './entities.schemas';

export function entityRoutes(deps: AppDeps): Route[] {
  const service = deps.services.entities;

  return [
    defineRoute({
      method: 'post',
      path: '/entities',
      summary: 'Create a customer or seller entity, optionally with its first address',
      tag: 'Entities',
      access: requires('EntityService:createEntity'),
      body: createEntityBody,
      response: entitySchema,
      successStatus: 201,
      handler: async ({ body, auth }) => service.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/entities',
      summary: 'List entities, optionally of one type; search matches name or identifier',
      tag: 'Entities',
      access: requires('EntityService:getEntitiesByType'),
      query: entityListQuery,
      response: pageOf(entitySchema),
      handler: async ({ query, auth }) => service.list(auth.organisationId, query, { type: query.type }),
    }),
    // Declared before /entities/{id} so that the literal segment is never read as an id.
    documented(
      defineRoute({
        method: 'get',
        path: '/entities/by-identifier',
        summary: 'Read an entity by its identifier',
        tag: 'Entities',
        access: requires('EntityService:getEntityByIdentifier'),
        query: identifierQuery,
        response: entitySchema,
        handler: async ({ query, auth }) => service.getByIdentifier(auth.organisationId, query.identifier),
      }),
      { errors: { 404: "No live entity of the caller's organisation has this identifier" } },
    ),
    // The earlier spelling, which tools cannot tell from /entities/{id}/addresses: kept for the integrations
    // that call it.
    documented(
      defineRoute({
        method: 'get',
        path: '/entities/by-identifier/{identifier}',
        summary: 'Read an entity by its identifier (deprecated)',
        tag: 'Entities',
        access: requires('EntityService:getEntityByIdentifier'),
        params: identifierQuery,
        response: entitySchema,
        handler: async ({ params, auth }) => service.getByIdentifier(auth.organisationId, params.identifier),
      }),
      { deprecatedFor: 'GET /entities/by-identifier?identifier=…' },
    ),
    defineRoute({
      method: 'get',
      path: '/entities/{id}',
      summary: 'Read an entity with its addresses',
      tag: 'Entities',
      access: requires('EntityService:getEntityById'),
      params: idParam,
      response: entitySchema,
      handler: async ({ params, auth }) => service.getById(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'delete',
      path: '/entities/{id}',
      summary: 'Delete an entity; it is kept for the usage and invoices that name it but vanishes from every read',
      tag: 'Entities',
      access: requires('EntityService:deleteEntity'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await service.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
