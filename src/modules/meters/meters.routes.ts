import { z } from 'zod';
import { pageOf, pageQuery } from '../../http/paging';
import { documented } from '../../http/openapi';
import { defineRoute, requires, type Route } from '../../http/route';
import { atLeastOne, byInstant, ianaTimeZone, idParam, isoDateTime, ordered, queryInteger, reference, text, timestamps } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { batchRecordSchema, batchResultSchema } from '../usage';
import { filtersSchema, groupBySchema, MAX_QUERY_ROWS, meterQueryParams } from './meter-dimensions';

const aggregation = z.enum(['sum', 'count', 'max', 'unique_count', 'latest']);

const meterSchema = z.object({
  id: z.string(),
  name: z.string(),
  metric: z.string(),
  aggregation,
  uniqueField: z.string().nullable(),
  groupBy: groupBySchema,
  filters: filtersSchema,
  backfill: z
    .object({
      status: z
        .enum(['pending', 'running', 'completed', 'failed'])
        .describe('how far the rollups are filled from events stored before the meter was defined as it is: pending and running read raw events (exact) until completed; failed keeps reading raw events'),
      eventsRead: z.number().int().min(0).describe("events of the meter's metric the fill has read so far"),
    })
    .describe("the fill of the meter's usage rollups after it was created or its metric, filters or groupBy changed"),
  ...timestamps,
});

const meterFields = {
  name: text(200),
  metric: text(255),
  uniqueField: text(255).optional().describe('metadata field counted by unique_count'),
  groupBy: groupBySchema.optional(),
  filters: filtersSchema.optional(),
};

/** unique_count counts the distinct values of a metadata field, so it needs the field's name. */
const meterBody = z.discriminatedUnion('aggregation', [
  z.object({ ...meterFields, aggregation: aggregation.exclude(['unique_count']) }),
  z.object({ ...meterFields, aggregation: z.literal('unique_count'), uniqueField: text(255).describe('metadata field counted by unique_count') }),
]);

const meterUpdateBody = atLeastOne({
  name: text(200).optional(),
  metric: text(255).optional(),
  aggregation: aggregation.optional(),
  uniqueField: text(255).nullable().optional(),
  groupBy: groupBySchema.optional(),
  filters: filtersSchema.optional(),
});

const usageQuery = ordered(
  z.object({
    customerEntityId: reference().optional(),
    from: isoDateTime.optional().describe('an instant (ISO date-time with a zone), inclusive'),
    to: isoDateTime.optional().describe('an instant (ISO date-time with a zone), exclusive; not before from'),
    groupBy: z.enum(['day', 'month']).optional().describe("calendar days or months in the organisation's time zone, each named by its first day"),
  }),
  'from',
  'to',
  byInstant,
);

const meterUsageSchema = z.object({
  meterId: z.string(),
  aggregation,
  customerEntityId: z.string().nullable(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  value: z.string().nullable().describe('null when no event falls in the window (max, latest)'),
  groups: z.array(z.object({ period: z.string(), value: z.string().nullable() })),
});

const meterQuery = ordered(
  z.object({
    from: isoDateTime.describe('an instant (ISO date-time with a zone), inclusive'),
    to: isoDateTime.describe('an instant (ISO date-time with a zone), exclusive; not before from'),
    windowSize: z.enum(['hour', 'day', 'month']).default('day').describe("clock hours, calendar days or calendar months of the time zone; to - from at most 31 days (hour), 366 days (day) or 3,660 days (month)"),
    groupBy: z
      .union([z.string().max(1000), z.array(z.string().max(1000)).max(6)], { error: "must name at most 6 keys, each up to 1,000 characters: the meter's dimensions or customer" })
      .optional()
      .describe("dimensions of the meter to split by, or customer; repeated (groupBy=a&groupBy=b) or comma-separated"),
    customerId: reference().optional().describe("only the usage of this customer's entities"),
    entityId: reference().optional().describe('only the usage of this customer entity'),
    timezone: ianaTimeZone.optional().describe("IANA time zone the windows follow; the organisation's when absent"),
    page: queryInteger(1).default(1),
    limit: queryInteger(1, MAX_QUERY_ROWS).default(100),
  }),
  'from',
  'to',
  byInstant,
);

const meterQuerySchema = z.object({
  meterId: z.string(),
  from: z.string(),
  to: z.string(),
  windowSize: z.enum(['hour', 'day', 'month']),
  timezone: z.string(),
  rows: z.array(
    z.object({
      windowStart: z.string(),
      windowEnd: z.string(),
      groups: z.record(z.string(), z.string().nullable()).describe('the value of each dimension asked (null: the events lack the key), and customer when asked'),
      value: z.string().nullable().describe('the aggregate, an exact decimal; null for max or latest over events without a value'),
    }),
  ),
  page: z.number(),
  limit: z.number(),
  total: z.number(),
});

export function meterRoutes(deps: AppDeps): Route[] {
  const meters = deps.services.meters;
  const usage = deps.services.usage;

  return [
    defineRoute({
      method: 'post',
      path: '/meters',
      summary: 'Create a meter (Admin only)',
      tag: 'Meters',
      access: requires('MeterService:createMeter'),
      body: meterBody,
      response: meterSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => meters.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'put',
      path: '/meters/{id}',
      summary: 'Update a meter (Admin only)',
      tag: 'Meters',
      access: requires('MeterService:updateMeter'),
      params: idParam,
      body: meterUpdateBody,
      response: meterSchema,
      handler: async ({ params, body, auth }) => meters.update(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'get',
      path: '/meters',
      summary: 'List meters',
      tag: 'Meters',
      access: requires('MeterService:getMeters'),
      query: pageQuery,
      response: pageOf(meterSchema),
      handler: async ({ query, auth }) => meters.list(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/meters/{id}',
      summary: 'Read a meter',
      tag: 'Meters',
      access: requires('MeterService:getMeters'),
      params: idParam,
      response: meterSchema,
      handler: async ({ params, auth }) => meters.get(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'get',
      path: '/meters/{id}/usage',
      summary: "A meter's aggregate over a window, optionally per day or month of the organisation's time zone",
      tag: 'Meters',
      access: requires('MeterService:getMeters'),
      params: idParam,
      query: usageQuery,
      response: meterUsageSchema,
      handler: async ({ params, query, auth }) => meters.usage(auth.organisationId, params.id, query),
    }),
    documented(
      defineRoute({
        method: 'get',
        path: '/meters/{id}/query',
        summary: "A meter's usage per window of a time zone, split by its dimensions",
        tag: 'Meters',
        access: requires('MeterService:getMeters'),
        params: idParam,
        query: meterQuery,
        response: meterQuerySchema,
        handler: async ({ params, query, auth, req }) => meters.query(auth.organisationId, params.id, { ...query, filter: meterQueryParams(req.query) }),
      }),
      {
        queryParameters: [
          {
            name: 'filter',
            description:
              'Narrows to the listed values of dimensions of the meter: filter[model]=a,b (or filter.model=a,b) counts only events whose model is a or b; a value in double quotes is taken as written, commas and spaces included (filter.name="Acme, Inc",Globex; "" for a quote inside it); at most 100 values of at most 255 characters each',
            style: 'deepObject',
            explode: true,
            schema: { type: 'object', additionalProperties: { type: 'string', minLength: 1 } },
          },
        ],
      },
    ),
    defineRoute({
      method: 'post',
      path: '/meters/{id}/usage',
      summary: "Ingest usage for one meter: each event takes the meter's metric",
      tag: 'Meters',
      access: requires('MeterService:createUsageByMeter'),
      params: idParam,
      body: z.object({ events: z.array(z.unknown()).min(1).describe('Usage events without their metric, each judged on its own (see failedRecords); at most 10,000 (413 above)') }),
      response: batchResultSchema,
      accepted: batchRecordSchema,
      itemsJudgedAlone: 'events',
      handler: async ({ params, body, auth, req, accepted }) => {
        const metric = await meters.metricOf(auth.organisationId, params.id);
        // An event that is not an object is passed on as it is, to fail alone as the batch routes fail it.
        const outcome = await usage.ingest(
          auth.organisationId,
          body.events.map((event) => (typeof event === 'object' && event !== null && !Array.isArray(event) ? { ...event, metric } : event)),
          req.header('Idempotency-Key'),
        );
        return outcome.state === 'done' ? outcome.result : accepted(outcome.batch);
      },
    }),
  ];
}
