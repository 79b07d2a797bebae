import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, byInstant, decimal, freeText, isoDateTime, jsonObject, ordered, reference, text } from '../../http/schemas';
import { check } from '../../http/check';
import { LAST_INSTANT } from '../../domain/iso-dates';
import { storableEvent, unstorableReason, VALUE_PRECISION, VALUE_SCALE, type ParsedUsageEvent } from '../../domain/usage-event';

/** usage_events.value is NUMERIC(30,10). */
const usageValue = decimal({ precision: VALUE_PRECISION, scale: VALUE_SCALE });

/**
 * An event's instant: any a date-time names but the very last, 9999-12-31T23:59:59.999Z, which no query
 * window can hold (its `to` is exclusive and can name no later instant), so that no stored event is beyond
 * every read.
 */
// Later instants are refused already, as past the year 9999: only that one is left to refuse.
const eventTimestamp = isoDateTime.refine((value) => Date.parse(value) !== Date.parse(LAST_INSTANT), `must be before ${LAST_INSTANT}, the last instant a query can end at`);

/** One event sent on its own: checked here, with the rules the batch applies to each of its events. */
export const usageEventInput = z
  .object({
    CustomerEntityId: reference(255).describe('Id of the customer entity the usage belongs to'),
    metric: text(255).describe('what is measured: the name meters count events by; trimmed, not blank'),
    value: usageValue,
    timestamp: eventTimestamp,
    metadata: jsonObject.optional(),
    eventId: freeText(255)
      .refine((id) => id === '' || /\S/.test(id), 'must not be only spaces: send none (or "") for an event without an id')
      .optional()
      .describe('Unique per organisation; a repeat is stored once and counts as a success'),
    jobId: freeText(255).optional(),
    JobId: freeText(255).optional(),
  })
  .describe('A usage event');

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * One event of a batch, judged alone by the check of an event sent alone (`usageEventInput`, closed to
 * other properties): the two routes cannot differ on what a value, a timestamp or an id may be. The
 * reasons are those of a 400's error items, each after the path it names (`value must be ...`).
 */
export function parseUsageEvent(raw: unknown): ParsedUsageEvent {
  if (!isObject(raw)) return { ok: false, error: 'event must be an object' };
  // Text Postgres cannot store, whether the claim check already stood the event in or not.
  const unstorable = unstorableReason(raw) ?? unstorableReason(storableEvent(raw) as Record<string, unknown>);
  if (unstorable) return { ok: false, error: unstorable };
  const checked = check(usageEventInput, raw, { closed: true });
  if (!checked.ok) return { ok: false, error: checked.problems.map(({ path, message }) => [...path, message].join(path.length > 0 ? ' ' : '')).join('; ') };
  const event = checked.data;
  return {
    ok: true,
    event: {
      customerEntityId: event.CustomerEntityId,
      metric: event.metric,
      value: event.value,
      timestamp: new Date(event.timestamp),
      metadata: event.metadata ?? null,
      // An empty eventId is no id: stored as '' it would make every such event a duplicate of the first.
      eventId: event.eventId || null,
      jobId: event.jobId || event.JobId || null,
    },
  };
}

/** The batch's envelope only: each event is judged on its own by the ingestion workflow. */
export const batchBody = z.object({
  events: z
    .array(z.unknown())
    .min(1, 'events must not be empty')
    .describe('Usage events, each judged on its own (see failedRecords): any JSON value is taken, and one that is not a valid event fails alone. At most 10,000 events (413 above)'),
});

export const failedRecordSchema = z.object({
  index: z.number().int(),
  error: z.string(),
  code: z.union([z.number().int(), z.string()]),
  statusCode: z.number().int(),
});

export const duplicateEventSchema = z
  .object({
    index: z.number().int().describe('zero-based position of the event in the request'),
    eventId: z.string().describe('the eventId already stored (earlier, or earlier in the same batch)'),
  })
  .describe('An accepted event stored once already: counted in summary.duplicates and in summary.success');

const duplicateEvents = z
  .array(duplicateEventSchema)
  .describe('every duplicate of summary.duplicates, ordered by index (batches ingested before these were listed show none)');

export const summarySchema = z.object({
  success: z.number().int(),
  failed: z.number().int(),
  total: z.number().int(),
  duplicates: z.number().int().describe('accepted events whose eventId was already stored; each is listed in duplicateEvents'),
});

export const batchResultSchema = z.object({
  batchId: z.string(),
  summary: summarySchema,
  failedRecords: z.array(failedRecordSchema),
  duplicateEvents,
});

export const batchRecordSchema = z.object({
  id: z.string(),
  status: z.enum(['processing', 'completed', 'failed', 'abandoned']),
  error: z.string().nullable().describe('why ingestion gave up, for a failed batch'),
  total: z.number().int(),
  summary: summarySchema.nullable(),
  failedRecords: z.array(failedRecordSchema),
  duplicateEvents,
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

export const usageEventVersionSchema = z.object({
  value: z.string(),
  timestamp: z.string(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  change: z.enum(['edited', 'deleted']).describe('what replaced this version'),
  changedAt: z.string(),
});

export const usageListQuery = ordered(
  pageQuery.extend({
    customerEntityId: reference().optional(),
    metric: reference(255).optional(),
    from: isoDateTime.optional().describe('an instant (ISO date-time with a zone): events at or after it'),
    to: isoDateTime.optional().describe('an instant (ISO date-time with a zone): events before it; not before from'),
  }),
  'from',
  'to',
  byInstant,
);

export const usageUpdateBody = atLeastOne({
  value: usageValue.optional(),
  timestamp: eventTimestamp.optional(),
  metadata: jsonObject.nullable().optional(),
});

export const bulkDeleteBody = z.object({ ids: z.array(reference()).min(1).max(10_000) });
