import { instantProblem, jsonProblem, jsonTextProblem, numericProblem, textProblem } from './storable';

/**
 * Parsing of one raw usage event, judged on its own so that one bad event never fails the rest of a
 * batch: everything the event table could refuse is refused here, with its reason. Pure: the ingestion
 * service and the unit tests run the same code.
 */
export interface UsageEvent {
  customerEntityId: string;
  metric: string;
  /** Decimal string, never a binary float. */
  value: string;
  timestamp: Date;
  metadata: Record<string, unknown> | null;
  eventId: string | null;
  jobId: string | null;
}

/** The `usage_events.value` column: NUMERIC(30, 10). */
export const VALUE_PRECISION = 30;
export const VALUE_SCALE = 10;

export type ParsedUsageEvent = { ok: true; event: UsageEvent } | { ok: false; error: string };

const MAX_TEXT = 255;
// ISO 8601 date-time with an explicit zone (Z or ±hh:mm); a bare date or a zone-less time is ambiguous.
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function text(raw: Record<string, unknown>, field: string, required: boolean): string | null | Error {
  const value = raw[field];
  if (value === undefined || value === null || value === '') {
    return required ? new Error(`${field} is required`) : null;
  }
  if (typeof value !== 'string') return new Error(`${field} must be a string`);
  if (value.length > MAX_TEXT) return new Error(`${field} must be at most ${MAX_TEXT} characters`);
  const problem = textProblem(value);
  return problem ? new Error(`${field} ${problem}`) : value;
}

/** A decimal the column holds exactly: out of range or needing rounding is refused, never altered. */
function decimalValue(value: unknown): string | Error {
  if (value === undefined || value === null || value === '') return new Error('value is required');
  let decimal: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return new Error('value must be a finite number');
    decimal = String(value);
  } else if (typeof value === 'string' && NUMERIC.test(value.trim())) {
    decimal = value.trim();
  } else {
    return new Error('value must be a number');
  }
  const problem = numericProblem(decimal, VALUE_PRECISION, VALUE_SCALE);
  return problem ? new Error(`value ${problem}`) : decimal;
}

function timestampValue(value: unknown): Date | Error {
  if (value === undefined || value === null || value === '') return new Error('timestamp is required');
  if (typeof value !== 'string' || !ISO_DATE_TIME.test(value)) {
    return new Error('timestamp is not an ISO 8601 date-time');
  }
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return new Error('timestamp is not an ISO 8601 date-time');
  // Reject calendar overflow such as 2026-02-30, which Date would silently roll over.
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const calendar = new Date(0);
  calendar.setUTCFullYear(year, month - 1, day);
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) {
    return new Error('timestamp is not an ISO 8601 date-time');
  }
  const problem = instantProblem(date);
  return problem ? new Error(`timestamp ${problem}`) : date;
}

/**
 * What stands in, in the claim check, for an event holding text Postgres cannot store even as JSON (a NUL
 * character, an unpaired surrogate): the event fails alone, with the reason, like any other bad event.
 */
const UNSTORABLE = '$unstorable';

export function storableEvent(raw: unknown): unknown {
  const found = jsonTextProblem(raw);
  if (!found) return raw;
  return { [UNSTORABLE]: `${found.path.join('.') || 'event'} ${found.problem}` };
}

/** The properties an event may have: any other fails the event. */
export const USAGE_EVENT_PROPERTIES: readonly string[] = ['CustomerEntityId', 'metric', 'value', 'timestamp', 'metadata', 'eventId', 'jobId', 'JobId'];

export function parseUsageEvent(raw: unknown): ParsedUsageEvent {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, error: 'event must be an object' };
  }
  const unstorable = (raw as Record<string, unknown>)[UNSTORABLE];
  if (typeof unstorable === 'string') return { ok: false, error: unstorable };
  const record = raw as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !USAGE_EVENT_PROPERTIES.includes(key));
  if (unknown.length > 0) return { ok: false, error: `${unknown.join(', ')}: not ${unknown.length === 1 ? 'a property' : 'properties'} of a usage event` };
  const customerEntityId = text(record, 'CustomerEntityId', true);
  const metric = text(record, 'metric', true);
  const eventId = text(record, 'eventId', false);
  const jobId = text(record, 'jobId', false);
  const capitalJobId = text(record, 'JobId', false);
  const value = decimalValue(record.value);
  const timestamp = timestampValue(record.timestamp);
  const metadata = record.metadata;
  for (const result of [customerEntityId, metric, value, timestamp, eventId, jobId, capitalJobId]) {
    if (result instanceof Error) return { ok: false, error: result.message };
  }
  if (metadata !== undefined && metadata !== null && (typeof metadata !== 'object' || Array.isArray(metadata))) {
    return { ok: false, error: 'metadata must be an object' };
  }
  const metadataProblem = jsonProblem(metadata);
  if (metadataProblem) return { ok: false, error: `metadata ${metadataProblem}` };
  return {
    ok: true,
    event: {
      customerEntityId: customerEntityId as string,
      metric: metric as string,
      value: value as string,
      timestamp: timestamp as Date,
      metadata: (metadata as Record<string, unknown> | undefined) ?? null,
      eventId: eventId as string | null,
      jobId: (jobId as string | null) ?? (capitalJobId as string | null),
    },
  };
}
