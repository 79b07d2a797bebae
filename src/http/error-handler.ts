import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { AppError, ERROR_CODES, fromApplicationFailure } from '../domain/errors';
import { sendError } from './envelope';

export function zodToAppError(error: ZodError, location: string): AppError {
  return AppError.invalid(error.issues.map((issue) => ({ path: [location, ...issue.path.map(String)].join('.'), message: issue.message })));
}

/** Errors raised by express's body parsers, by their `type`. */
const BODY_PARSER_ERRORS: Record<string, () => AppError> = {
  'entity.parse.failed': () => new AppError('validation', 'Malformed JSON', [{ code: ERROR_CODES.validation, path: 'body', message: 'Request body is not valid JSON' }]),
  'entity.too.large': () => new AppError('payload_too_large', 'Payload too large', [{ code: ERROR_CODES.payload_too_large, message: 'Request body exceeds the size limit' }]),
  'charset.unsupported': () => new AppError('validation', 'Unsupported encoding', [{ code: ERROR_CODES.validation, path: 'body', message: 'Unsupported body encoding' }]),
  'encoding.unsupported': () => new AppError('validation', 'Unsupported encoding', [{ code: ERROR_CODES.validation, path: 'body', message: 'Unsupported body encoding' }]),
};

function toAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error instanceof ZodError) return zodToAppError(error, 'body');
  const bodyParserType = (error as { type?: unknown } | null)?.type;
  if (typeof bodyParserType === 'string' && Object.hasOwn(BODY_PARSER_ERRORS, bodyParserType)) return BODY_PARSER_ERRORS[bodyParserType]!();
  if ((error as { status?: unknown } | null)?.status === 413) return BODY_PARSER_ERRORS['entity.too.large']!();
  return fromApplicationFailure(error);
}

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('not_found', 'Not found', [{ code: ERROR_CODES.not_found, message: `No route for ${req.method} ${req.path}` }]));
};

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const known = toAppError(error);
  if (known) {
    sendError(res, known.status, known.message, known.items);
    return;
  }
  req.log?.error({ err: error }, 'unhandled error');
  // Never a stack trace, SQL or driver message in the body.
  const internal = new AppError('internal', 'Internal server error');
  sendError(res, internal.status, internal.message, internal.items);
};
