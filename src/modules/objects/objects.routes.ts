import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { newId } from '../../db/ids';
import { OPERATORS } from '../../domain/object-query';
import { AppError } from '../../domain/errors';
import { MAX_PAGE_SIZE, pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { exportWorkflow, exportWorkflowId } from '../../../workflows/export.workflow';
import { OrganisationIdKey } from '../../../workflows/search-attributes';
import { createJobRepository, jobSchema, toJob } from '../jobs/jobs.repository';
import { OBJECTS, objectName, toObjectRecord } from './object-registry';
import { objectQuery } from './object-sql';

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
  const jobs = createJobRepository(deps.db);
  return [
    defineRoute({
      method: 'get',
      path: '/objects/schema/{objectName}',
      summary: "An object's fields, their types, which can be queried, and its relations",
      tag: 'Objects',
      access: requires('JobService:create'),
      params: z.object({ objectName: z.string().min(1).max(64) }),
      response: z.object({
        object: z.string(),
        queryableFields: z.array(z.object({ name: z.string(), type: z.string() })),
        relations: z.array(z.object({ field: z.string(), object: z.string() })),
        jsonSchema: z.record(z.string(), z.unknown()),
      }),
      handler: async ({ params }) => {
        const descriptor = OBJECTS[params.objectName];
        if (!descriptor) throw AppError.notFound('Object');
        const { $schema: _ignored, ...jsonSchema } = z.toJSONSchema(descriptor.schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
        return {
          object: params.objectName,
          queryableFields: Object.entries(descriptor.fields).map(([name, field]) => ({ name, type: field.type })),
          relations: descriptor.relations,
          jsonSchema,
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/objects/query',
      summary: 'Filter, sort and page any object with the query language (whitelisted fields, bound values)',
      tag: 'Objects',
      access: requires('ObjectService:query'),
      body: queryBody,
      response: pageOf(z.record(z.string(), z.unknown())),
      handler: async ({ body, auth }) => {
        const descriptor = OBJECTS[body.object]!;
        const { base, order } = objectQuery(deps.db, descriptor, auth.organisationId, body);
        const [rows, counted] = await Promise.all([
          base.clone().select('*').orderBy([...order, { column: descriptor.fields.id!.column, order: 'asc' }]).limit(body.limit).offset((body.page - 1) * body.limit),
          base.clone().count<{ n: string }[]>({ n: '*' }),
        ]);
        return { items: rows.map((row: Record<string, unknown>) => toObjectRecord(descriptor, row)), page: body.page, limit: body.limit, total: Number(counted[0]?.n ?? 0) };
      },
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
      handler: async ({ body, auth }) => {
        // Validate the query now, so a bad field answers 400 instead of failing the job later.
        objectQuery(deps.db, OBJECTS[body.object]!, auth.organisationId, body);
        const jobId = newId('job');
        const workflowId = exportWorkflowId(jobId);
        const job = await jobs.create({ id: jobId, organisationId: auth.organisationId, type: 'export', params: body, workflowId, createdBy: auth.subjectId });
        await deps.temporal.client.workflow.start(exportWorkflow, {
          workflowId,
          taskQueue: deps.temporal.taskQueue,
          args: [{ jobId, organisationId: auth.organisationId, object: body.object, query: { filter: body.filter } }],
          typedSearchAttributes: [{ key: OrganisationIdKey, value: auth.organisationId }],
        });
        return toJob(job);
      },
    }),
  ];
}
