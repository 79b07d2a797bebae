import { z } from 'zod';
import { pageOf } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { idParam } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import {
  batchBody,
  batchRecordSchema,
  batchResultSchema,
  bulkDeleteBody,
  usageEventInput,
  usageEventSchema,
  usageEventVersionSchema,
  usageListQuery,
  usageUpdateBody,
} from './usage.schemas';

export function usageRoutes(deps: AppDeps): Route[] {
  const service = deps.services.usage;
  /** POST /events/batch and POST /usage/bulk: one handler under two paths, each with its own action. */
  const batchRoute = (at: Pick<Route, 'path' | 'summary' | 'tag' | 'access'>) =>
    defineRoute({
      method: 'post',
      ...at,
      body: batchBody,
      response: batchResultSchema,
      accepted: batchRecordSchema,
      itemsJudgedAlone: 'events',
      handler: async ({ body, auth, req, accepted }) => {
        const outcome = await service.ingest(auth.organisationId, body.events, req.header('Idempotency-Key'));
        return outcome.state === 'done' ? outcome.result : accepted(outcome.batch);
      },
    });

  return [
    batchRoute({
      path: '/events/batch',
      summary: 'Ingest a batch of usage events; each event succeeds or fails on its own',
      tag: 'Events',
      access: requires('MeterService:createUsageByMeter'),
    }),
    defineRoute({
      method: 'get',
      path: '/events/batches/{id}',
      summary: 'A batch with its counts and failed records',
      tag: 'Events',
      access: requires('EventService:getEventById'),
      params: idParam,
      response: batchRecordSchema,
      handler: async ({ params, auth }) => service.batch(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/events',
      summary: 'Ingest one usage event',
      tag: 'Events',
      access: requires('EventService:createEvent'),
      body: usageEventInput,
      response: batchResultSchema,
      accepted: batchRecordSchema,
      successStatus: 201,
      handler: async ({ auth, req, accepted }) => {
        // Checked by the schema above, then ingested as sent, as a batch's events are: the same event under
        // the same Idempotency-Key is the same batch on either route.
        const outcome = await service.ingestOne(auth.organisationId, req.body as unknown, req.header('Idempotency-Key'));
        return outcome.state === 'done' ? outcome.result : accepted(outcome.batch);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/events/{id}',
      summary: 'One stored usage event',
      tag: 'Events',
      access: requires('EventService:getEventById'),
      params: idParam,
      response: usageEventSchema,
      handler: async ({ params, auth }) => service.event(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/usage',
      summary: 'Create one usage record (same ingestion path as the batch)',
      tag: 'Usage',
      access: requires('UsageService:createUsage'),
      body: usageEventInput,
      response: batchResultSchema,
      accepted: batchRecordSchema,
      successStatus: 201,
      handler: async ({ auth, req, accepted }) => {
        // Checked by the schema above, then ingested as sent, as a batch's events are: the same event under
        // the same Idempotency-Key is the same batch on either route.
        const outcome = await service.ingestOne(auth.organisationId, req.body as unknown, req.header('Idempotency-Key'));
        return outcome.state === 'done' ? outcome.result : accepted(outcome.batch);
      },
    }),
    batchRoute({
      path: '/usage/bulk',
      summary: 'Bulk-create usage events (same as POST /events/batch)',
      tag: 'Usage',
      access: requires('UsageService:bulkCreateEvents'),
    }),
    defineRoute({
      method: 'post',
      path: '/usage/bulk-delete',
      summary: 'Delete usage events by id; ids not in the organisation are reported as not deleted',
      tag: 'Usage',
      access: requires('UsageService:bulkDeleteEvents'),
      body: bulkDeleteBody,
      response: z.object({ deleted: z.array(z.string()), notFound: z.array(z.string()) }),
      handler: async ({ body, auth }) => service.deleteEvents(auth.organisationId, body.ids),
    }),
    defineRoute({
      method: 'get',
      path: '/usage',
      summary: 'List usage events, filtered by customer entity, metric and time range',
      tag: 'Usage',
      access: requires('UsageService:getUsage'),
      query: usageListQuery,
      response: pageOf(usageEventSchema),
      handler: async ({ query, auth }) =>
        service.listEvents(
          auth.organisationId,
          {
            customerEntityId: query.customerEntityId,
            metric: query.metric,
            from: query.from ? new Date(query.from) : undefined,
            to: query.to ? new Date(query.to) : undefined,
          },
          query,
        ),
    }),
    defineRoute({
      method: 'get',
      path: '/usage/{id}',
      summary: 'One usage event',
      tag: 'Usage',
      access: requires('UsageService:getUsage'),
      params: idParam,
      response: usageEventSchema,
      handler: async ({ params, auth }) => service.event(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/usage/{id}/versions',
      summary: 'The earlier versions of a usage event, oldest first: each as it was before an edit or its deletion',
      tag: 'Usage',
      access: requires('UsageService:getUsage'),
      params: idParam,
      response: z.object({ items: z.array(usageEventVersionSchema) }),
      handler: async ({ params, auth }) => service.eventVersions(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'put',
      path: '/usage/{id}',
      summary: "Correct a usage event's value, timestamp or metadata",
      tag: 'Usage',
      access: requires('UsageService:updateUsage'),
      params: idParam,
      body: usageUpdateBody,
      response: usageEventSchema,
      handler: async ({ params, body, auth }) =>
        service.updateEvent(auth.organisationId, params.id, {
          value: body.value,
          timestamp: body.timestamp ? new Date(body.timestamp) : undefined,
          metadata: body.metadata,
        }),
    }),
    defineRoute({
      method: 'delete',
      path: '/usage/{id}',
      summary: 'Delete a usage event',
      tag: 'Usage',
      access: requires('UsageService:deleteUsage'),
      params: idParam,
      response: z.object({ id: z.string(), deleted: z.literal(true) }),
      handler: async ({ params, auth }) => service.deleteEvent(auth.organisationId, params.id),
    }),
  ];
}
