import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf, pageQuery } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import { atLeastOne, deletedSchema, idParam, deleted, text, reference, freeText } from '../../http/schemas';
import { JOB_STATUSES, jobSchema } from './jobs.schemas';
import { streamAttachment } from '../../http/download';

/** A count of work items: a whole number from 0. */
const workCount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export function jobRoutes(deps: AppDeps): Route[] {
  const { jobs, jobControl } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/jobs',
      summary: 'Record a job of your own, to track work outside this service',
      tag: 'Jobs',
      access: requires('JobService:create'),
      body: z.object({ type: text(100), total: workCount.optional() }),
      response: jobSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => jobs.create(auth.organisationId, { type: body.type, total: body.total, createdBy: auth.subjectId }),
    }),
    defineRoute({
      method: 'get',
      path: '/jobs',
      summary: 'List jobs, optionally of one type or status',
      tag: 'Jobs',
      access: requires('JobService:get'),
      query: pageQuery.extend({ type: reference(100).optional(), status: z.enum(JOB_STATUSES).optional() }),
      response: pageOf(jobSchema),
      handler: async ({ query, auth }) => jobs.list(auth.organisationId, query, query),
    }),
    defineRoute({
      method: 'get',
      path: '/jobs/{id}',
      summary: 'A job with its status and progress',
      tag: 'Jobs',
      access: requires('JobService:get'),
      params: idParam,
      response: jobSchema,
      handler: async ({ params, auth }) => jobs.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/jobs/{id}',
      summary: "Report progress on a job of your own (a job run by a workflow answers 409)",
      tag: 'Jobs',
      access: requires('JobService:update'),
      params: idParam,
      body: atLeastOne({
        status: z.enum(JOB_STATUSES).optional(),
        done: workCount.optional(),
        total: workCount.nullable().optional(),
        result: z.unknown().optional(),
        error: freeText(2000).nullable().optional(),
      }),
      response: jobSchema,
      handler: async ({ params, body, auth }) => jobs.report(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/jobs/{id}',
      summary: 'Delete a job; a job still running in a workflow is cancelled first',
      tag: 'Jobs',
      access: requires('JobService:delete'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await jobControl.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    documented(
      defineRoute({
        method: 'get',
        path: '/jobs/{id}/file',
        summary: "Download a completed export's file (409 before it completes)",
        tag: 'Jobs',
        access: requires('JobService:get'),
        params: idParam,
        rawResponse: { contentType: 'text/csv' },
        handler: async ({ params, auth, res }) => {
          await streamAttachment(res, await jobs.exportFileOf(auth.organisationId, params.id), 'text/csv', `${params.id}.csv`);
        },
      }),
      { errors: { 409: 'The export has not completed' } },
    ),
  ];
}
