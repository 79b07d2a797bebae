import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { DomainError } from '../domain/errors';
import { AppError, ERROR_CODES, httpStatusOf, type ErrorKind } from './errors';
import { sendError } from './envelope';

const KINDS: readonly ErrorKind[] = [
  'validation',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'rate_limited',
  'payload_too_large',
  'unavailable',
  'internal',
];

export function zodToAppError(error: ZodError, location: string): AppError {
  return new AppError(
    'validation',
    'Validation failed',
    error.issues.map((issue) => ({
      code: ERROR_CODES.validation,
      path: [location, ...issue.path.map(String)].join('.'),
      message: issue.message,
    })),
  );
}

/**
 * Business failures raised inside workflows and activities reach the API as Temporal failures whose
 * `type` is one of our error kinds (see activities' `businessFailure`); find the innermost such cause.
 */
function fromTemporalFailure(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 8; depth += 1) {
    const candidate = current as { name?: string; type?: string; message?: string; details?: unknown[]; cause?: unknown };
    if (candidate.name === 'ApplicationFailure' && candidate.type && (KINDS as string[]).includes(candidate.type)) {
      const kind = candidate.type as ErrorKind;
      const items = Array.isArray(candidate.details?.[0]) ? (candidate.details[0] as AppError['items']) : [];
      return new AppError(kind, candidate.message ?? kind, items);
    }
    current = candidate.cause;
  }
  return undefined;
}

export const notFoundHandler: RequestHandler = (req, res) => {
  sendError(res, 404, 'Not found', [{ code: ERROR_CODES.not_found, message: `No route for ${req.method} ${req.path}` }]);
};

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const known = toAppError(error);
  if (known) {
    sendError(res, httpStatusOf(known.kind), known.message, known.items);
    return;
  }
  req.log?.error({ err: error }, 'unhandled error');
  // Never a stack trace, SQL or driver message in the body.
  sendError(res, 500, 'Internal server error', []);
};

function toAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error instanceof ZodError) return zodToAppError(error, 'body');
  if (error instanceof DomainError) return AppError.validation(error.message);
  const bodyError = error as { type?: string; status?: number };
  if (bodyError.type === 'entity.parse.failed') {
    return new AppError('validation', 'Malformed JSON', [{ code: ERROR_CODES.validation, path: 'body', message: 'Request body is not valid JSON' }]);
  }
  if (bodyError.type === 'entity.too.large' || bodyError.status === 413) {
    return new AppError('payload_too_large', 'Payload too large', [{ code: ERROR_CODES.payload_too_large, message: 'Request body exceeds the size limit' }]);
  }
  if (bodyError.type === 'charset.unsupported' || bodyError.type === 'encoding.unsupported') {
    return new AppError('validation', 'Unsupported encoding', [{ code: ERROR_CODES.validation, path: 'body', message: 'Unsupported body encoding' }]);
  }
  return fromTemporalFailure(error);
}
