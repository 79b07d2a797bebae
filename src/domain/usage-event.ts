import { storableJsonProblem } from './storable';

/**
 * One usage event as it is stored. Each raw event of a batch is judged on its own (so that one bad event
 * never fails the rest) by the same schema as an event sent alone: `parseUsageEvent` of the usage module.
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

/**
 * What stands in, in the claim check, for an event holding text Postgres cannot store even as JSON (a NUL
 * character, an unpaired surrogate): the event fails alone, with the reason, like any other bad event.
 */
const UNSTORABLE = '$unstorable';

export function storableEvent(raw: unknown): unknown {
  const found = storableJsonProblem(raw);
  if (!found) return raw;
  return { [UNSTORABLE]: `${found.path.join('.') || 'event'} ${found.problem}` };
}

/** Why an event cannot be stored even as JSON, when storableEvent stood it in; undefined otherwise. */
export function unstorableReason(raw: Record<string, unknown>): string | undefined {
  const reason = raw[UNSTORABLE];
  return typeof reason === 'string' ? reason : undefined;
}
