import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { AppError, ERROR_CODES, fromApplicationFailure } from '../domain/errors';
import { deterministicDatabaseError, isDatabaseUnavailable } from '../db/errors';
import { isTemporalUnavailable, temporalUnavailable } from '../temporal/client';
import { sendError } from './envelope';
import { UNKNOWN_PROPERTY } from './unknown-properties';

/** What an error item says of a property the request must have and does not. */
export const REQUIRED_PROPERTY = 'is required';

/** The issues a missing value raises: a wrong type, no option of a union, no value of an enum or literal. */
const MISSING_VALUE_ISSUES = new Set(['invalid_type', 'invalid_union', 'invalid_value']);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether the property an issue's path names is absent from an object of `input`. */
function absent(input: unknown, path: PropertyKey[]): boolean {
  if (path.length === 0) return false;
  let parent: unknown = input;
  for (const key of path.slice(0, -1)) parent = isRecord(parent) || Array.isArray(parent) ? (parent as Record<PropertyKey, unknown>)[key as string] : undefined;
  const key = String(path[path.length - 1]);
  return isRecord(parent) && (!Object.hasOwn(parent, key) || parent[key] === undefined);
}

/** A problem of a checked value: where it is (property names and array indexes) and what is wrong. */
export interface Problem {
  path: string[];
  message: string;
}

type UnionIssue = { code: 'invalid_union'; path: PropertyKey[]; errors?: Array<Array<ZodError['issues'][number]>> };

/**
 * What a union of objects that took none of its options says: the option the value came nearest to (the
 * fewest properties it does not take, then the fewest problems), by its own paths, rather than "Invalid
 * input" at the union. A union of plain values (a number or a numeric string) keeps its own message.
 */
function nearestOption(issue: UnionIssue): Array<ZodError['issues'][number]> | undefined {
  const options = (issue.errors ?? []).filter((list) => list.length > 0);
  if (!options.some((list) => list.some((one) => one.path.length > 0 || one.code === 'unrecognized_keys'))) return undefined;
  const unknownKeys = (list: Array<ZodError['issues'][number]>) => list.reduce((n, one) => n + (one.code === 'unrecognized_keys' ? one.keys.length : 0), 0);
  const nearest = [...options].sort((a, b) => unknownKeys(a) - unknownKeys(b) || a.length - b.length)[0]!;
  return nearest.map((one) => ({ ...one, path: [...issue.path, ...one.path] }));
}

/**
 * One problem per issue, by its path. A property that is missing says so, whatever type it should have
 * had: zod alone would say "Invalid input". `input` is what was parsed; without it, a missing value is told
 * by zod's own wording.
 */
export function zodProblems(error: ZodError, input?: unknown): Problem[] {
  return error.issues.flatMap((issue): Problem[] => {
    if (issue.code === 'invalid_union') {
      const nearest = nearestOption(issue as UnionIssue);
      if (nearest) return zodProblems({ issues: nearest } as ZodError, input);
    }
    const path = issue.path.map(String);
    // A strict object's unknown keys, each by its own path, as the router names those of any other object.
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: [...path, key], message: UNKNOWN_PROPERTY }));
    const missing =
      MISSING_VALUE_ISSUES.has(issue.code) && (input === undefined ? issue.code === 'invalid_type' && / received undefined$/.test(issue.message) : absent(input, issue.path));
    // A schema whose own message for its absence says when it is required ("is required when …") is heard.
    return [{ path, message: missing && !issue.message.startsWith(REQUIRED_PROPERTY) ? REQUIRED_PROPERTY : issue.message }];
  });
}

/** The error items of a zod error, each path under `location` (`body`, `query`, `params`). */
export function zodToAppError(error: ZodError, location: string, input?: unknown): AppError {
  return AppError.invalid(zodProblems(error, input).map(({ path, message }) => ({ path: [location, ...path].join('.'), message })));
}

/**
 * The JSON parser takes objects and arrays only: a body of valid JSON that is neither (`null`, `42`,
 * `"text"`) is a body of the wrong type, not malformed JSON.
 */
function jsonScalar(body: unknown): AppError | undefined {
  if (typeof body !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  const received = value === null ? 'null' : typeof value;
  return AppError.invalid([{ path: 'body', message: `Request body must be a JSON object, not ${received}` }]);
}

/** Errors raised by express's body parsers, by their `type`. */
const BODY_PARSER_ERRORS: Record<string, (error: { body?: unknown }) => AppError> = {
  'entity.parse.failed': (error) => (jsonScalar(error.body) ?? new AppError('validation', 'Malformed JSON', [{ code: ERROR_CODES.validation, path: 'body', message: 'Request body is not valid JSON' }])),
  'entity.too.large': () => new AppError('payload_too_large', 'Payload too large', [{ code: ERROR_CODES.payload_too_large, message: 'Request body exceeds the size limit' }]),
  // A charset the JSON parser does not read (`charset=latin1`) is a Content-Type the route does not take.
  'charset.unsupported': () =>
    new AppError('unsupported_media_type', 'Unsupported media type', [
      { code: ERROR_CODES.unsupported_media_type, path: 'headers.content-type', message: 'A JSON body is read as UTF-8 or UTF-16: send charset=utf-8, or none' },
    ]),
  'encoding.unsupported': () =>
    new AppError('unsupported_media_type', 'Unsupported encoding', [
      { code: ERROR_CODES.unsupported_media_type, path: 'headers.content-encoding', message: 'Content-Encoding must be gzip, deflate, br or identity' },
    ]),
  'entity.too.deep': () => new AppError('validation', 'Malformed JSON', [{ code: ERROR_CODES.validation, path: 'body', message: 'JSON is nested too deeply' }]),
};

/**
 * Other client errors raised by Express and its parsers before a route runs, recognised by their
 * http-errors status: a body that does not decompress, a path that is not valid percent-encoding.
 */
function clientError(error: unknown): AppError | undefined {
  const { status, expose } = (error ?? {}) as { status?: unknown; expose?: unknown };
  if (status !== 400) return undefined;
  // Express's router marks a path parameter it cannot decode this way.
  if (error instanceof URIError) {
    return new AppError('validation', 'Malformed path', [{ code: ERROR_CODES.validation, path: 'params', message: 'The path is not valid percent-encoded UTF-8' }]);
  }
  if (expose !== true) return undefined;
  return new AppError('validation', 'Malformed body', [{ code: ERROR_CODES.validation, path: 'body', message: 'The body could not be read (bad compression or a broken stream)' }]);
}

function toAppError(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error instanceof ZodError) return zodToAppError(error, 'body');
  const bodyParserType = (error as { type?: unknown } | null)?.type;
  if (typeof bodyParserType === 'string' && Object.hasOwn(BODY_PARSER_ERRORS, bodyParserType)) return BODY_PARSER_ERRORS[bodyParserType]!(error as { body?: unknown });
  if ((error as { status?: unknown } | null)?.status === 413) return BODY_PARSER_ERRORS['entity.too.large']!({});
  if (isDatabaseUnavailable(error) || isTemporalUnavailable(error)) return dependencyDown(isTemporalUnavailable(error) ? 'temporal' : 'postgres');
  return clientError(error) ?? deterministicDatabaseError(error) ?? fromApplicationFailure(error);
}

function dependencyDown(component: 'postgres' | 'temporal'): AppError {
  if (component === 'temporal') return temporalUnavailable();
  return new AppError('unavailable', 'Service unavailable', [
    { code: ERROR_CODES.unavailable, path: component, message: 'Postgres is not reachable; retry later, with the same Idempotency-Key' },
  ]);
}

/** When to try again after a 503: long enough for a restart, short enough not to stall a client. */
const RETRY_AFTER_SECONDS = '5';

export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new AppError('not_found', 'Not found', [{ code: ERROR_CODES.not_found, message: `No route for ${req.method} ${req.path}` }]));
};

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  // A download that failed half-way: the status is gone, so end the connection and let the client see it cut.
  if (res.headersSent) {
    req.log?.warn({ err: error }, 'failed after the answer began');
    res.destroy();
    return;
  }
  const known = toAppError(error);
  if (known) {
    if (known.kind === 'unavailable') res.setHeader('Retry-After', RETRY_AFTER_SECONDS);
    sendError(res, known.status, known.message, known.items);
    return;
  }
  req.log?.error({ err: error }, 'unhandled error');
  // Never a stack trace, SQL or driver message in the body.
  const internal = new AppError('internal', 'Internal server error');
  sendError(res, internal.status, internal.message, internal.items);
};
