import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { OPERATORS } from '../../domain/object-query';
import { MAX_PAGE_SIZE, pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { jobSchema } from '../jobs';
import { objectName } from './object-registry';
import { reference } from '../../http/schemas';

const filterItem = z.object({ field: z.string(), op: z.enum(OPERATORS), value: z.unknown().optional() });
const sortItem = z.object({ field: z.string(), direction: z.enum(['asc', 'desc']).default('asc') });
const queryBody = z.object({
  object: objectName,
  filter: z.array(filterItem).max(20).default([]),
  sort: z.array(sortItem).max(5).default([]),
  page: z.number().int().min(1).default(1),
  limit: z.number().int().min(1).max(MAX_PAGE_SIZE).default(20),
});

export function objectRoutes(deps: AppDeps): Route[] {
  const { objects, exports } = deps.services;
  return [
    defineRoute({
      method: 'get',
      path: '/objects/schema/{objectName}',
      summary: "An object's fields, their types, which can be queried, and its relations",
      tag: 'Objects',
      access: requires('JobService:create'),
      params: z.object({ objectName: reference() }),
      response: z.object({
        object: z.string(),
        queryableFields: z.array(z.object({ name: z.string(), type: z.string() })),
        relations: z.array(z.object({ field: z.string(), object: z.string() })),
        jsonSchema: z.record(z.string(), z.unknown()),
      }),
      handler: async ({ params }) => objects.schema(params.objectName),
    }),
    defineRoute({
      method: 'post',
      path: '/objects/query',
      summary: 'Filter, sort and page any object with the query language (whitelisted fields, bound values)',
      tag: 'Objects',
      access: requires('ObjectService:query'),
      body: queryBody,
      response: pageOf(z.record(z.string(), z.unknown())),
      handler: async ({ body, auth }) => objects.query(auth.organisationId, body),
    }),
    defineRoute({
      method: 'post',
      path: '/objects/export',
      summary: 'Export an object as CSV in the background, rows in id order: answers with the job; its file downloads from /jobs/{id}/file',
      tag: 'Objects',
      access: requires('ObjectService:export'),
      body: queryBody.omit({ page: true, limit: true, sort: true }).extend({ format: z.literal('csv').default('csv') }),
      response: jobSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => exports.start(auth.organisationId, auth.subjectId, body),
    }),
  ];
}
