import { ApplicationFailure } from '@temporalio/common';
import type { ErrorItem, ErrorKind } from '../src/http/errors';

/**
 * A business failure: never retried, and its `type` is an error kind the API maps to the envelope
 * (see fromTemporalFailure in src/http/error-handler.ts).
 */
export function businessFailure(kind: ErrorKind, message: string, items: ErrorItem[] = []): ApplicationFailure {
  return ApplicationFailure.create({ type: kind, message, nonRetryable: true, details: [items] });
}
