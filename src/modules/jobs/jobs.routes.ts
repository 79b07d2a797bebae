import fs from 'node:fs';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import { JOB_STATUSES, jobSchema } from './jobs.schemas';
import { sendAsAttachment } from '../../http/download';

export function jobRoutes(deps: AppDeps): Route[] {
  const { jobs, jobControl } = deps.services;

  return [
    defineRoute({
      method: 'post',
      path: '/jobs',
      summary: 'Record a job of your own, to track work outside this service',
      tag: 'Jobs',
      access: requires('JobService:create'),
      body: z.object({ type: z.string().trim().min(1).max(100), total: z.number().int().min(0).optional() }),
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
      query: pageQuery.extend({ type: z.string().optional(), status: z.enum(JOB_STATUSES).optional() }),
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
      body: z
        .object({ status: z.enum(JOB_STATUSES).optional(), done: z.number().int().min(0).optional(), total: z.number().int().min(0).nullable().optional(), result: z.unknown().optional(), error: z.string().max(2000).nullable().optional() })
        .refine((body) => Object.keys(body).length > 0, 'nothing to update'),
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
    defineRoute({
      method: 'get',
      path: '/jobs/{id}/file',
      summary: "Download a completed export's file (409 before it completes)",
      tag: 'Jobs',
      access: requires('JobService:get'),
      params: idParam,
      rawResponse: { contentType: 'text/csv' },
      handler: async ({ params, auth, res }) => {
        const file = await jobs.exportFileOf(auth.organisationId, params.id);
        sendAsAttachment(res, 'text/csv', `${params.id}.csv`);
        await new Promise<void>((resolve, reject) => {
          fs.createReadStream(file).on('error', reject).pipe(res).on('finish', resolve);
        });
      },
    }),
  ];
}
