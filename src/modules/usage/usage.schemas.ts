import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimalString } from '../../http/schemas';

export const usageEventInput = z
  .object({
    CustomerEntityId: z.string().describe('Id of the customer entity the usage belongs to'),
    metric: z.string(),
    value: z.union([z.number(), z.string()]).describe('A number or a numeric string'),
    timestamp: z.string().describe('ISO 8601 date-time with a zone'),
    metadata: z.record(z.string(), z.unknown()).optional(),
    eventId: z.string().optional().describe('Unique per organisation; a repeat is stored once and counts as a success'),
    jobId: z.string().optional(),
    JobId: z.string().optional(),
  })
  .describe('Each event is judged on its own inside the batch; see failedRecords');

/** The batch's envelope only: each event is judged on its own by the ingestion workflow. */
export const batchBody = z.object({
  events: z.array(z.unknown()).min(1, 'events must not be empty').describe('Usage events (see UsageEvent); at most 10,000 and 5 MB'),
});

export const failedRecordSchema = z.object({
  index: z.number().int(),
  error: z.string(),
  code: z.union([z.number().int(), z.string()]),
  statusCode: z.number().int(),
});

export const summarySchema = z.object({
  success: z.number().int(),
  failed: z.number().int(),
  total: z.number().int(),
  duplicates: z.number().int(),
});

export const batchResultSchema = z.object({
  batchId: z.string(),
  summary: summarySchema,
  failedRecords: z.array(failedRecordSchema),
});

export const batchRecordSchema = z.object({
  id: z.string(),
  status: z.enum(['processing', 'completed', 'failed']),
  error: z.string().nullable().describe('why ingestion gave up, for a failed batch'),
  total: z.number().int(),
  summary: summarySchema.nullable(),
  failedRecords: z.array(failedRecordSchema),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});

export const usageEventSchema = z.object({
  id: z.string(),
  CustomerEntityId: z.string(),
  metric: z.string(),
  value: z.string(),
  timestamp: z.string(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  eventId: z.string().nullable(),
  jobId: z.string().nullable(),
  batchId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const usageListQuery = pageQuery.extend({
  customerEntityId: z.string().optional(),
  metric: z.string().optional(),
  from: z.iso.datetime({ offset: true }).optional(),
  to: z.iso.datetime({ offset: true }).optional(),
});

export const usageUpdateBody = z
  .object({
    value: decimalString.optional(),
    timestamp: z.iso.datetime({ offset: true }).optional(),
    metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'nothing to update');

export const bulkDeleteBody = z.object({ ids: z.array(z.string().min(1)).min(1).max(10_000) });

export const idempotencyHeader = z.string().min(1).max(255).optional();
