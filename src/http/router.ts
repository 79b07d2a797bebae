import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import type { z } from 'zod';
import { AppError, ERROR_CODES, InvariantError } from '../domain/errors';
import { storableJsonProblem } from '../domain/storable';
import { JSON_TYPES, requireBodyType } from './body-guards';
import { checkIdempotencyKey, idempotentRoute } from './idempotency';
import { sendError, sendSuccess } from './envelope';
import { check } from './check';
import { queryParameterNames } from './openapi';
import { roleAllows } from './permissions';
import type { SessionVersions } from './sessions';
import { acceptedAnswer, expressPath, isAccepted, takesNoBody, type AuthContext, type Route } from './route';
import { propertySchema, takesArray, UNKNOWN_PROPERTY } from './unknown-properties';
import type { Problem } from './error-handler';
import type { AccessTokenIssuer } from '../modules/auth';
import type { IdempotencyService } from '../modules/idempotency';

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthContext;
  }
}

const UNAUTHORIZED = new AppError('unauthorized', 'Unauthorized', [{ code: ERROR_CODES.unauthorized, message: 'A valid bearer access token is required' }]);
const FORBIDDEN = new AppError('forbidden', 'Forbidden');


export interface RouterOptions {
  accessTokens: AccessTokenIssuer;
  /** Ends a session at once when its app's secret is rotated or its app or user deleted. */
  sessionVersions?: SessionVersions;
  rateLimitPerMinute: number;
  /** Where the answers of state-changing requests sent with an Idempotency-Key are kept. */
  idempotency: IdempotencyService;
  /** Shared counters for the per-token limit; this process's memory when absent. */
  rateLimitStore?: Store;
  /**
   * Check every answer against the route's documented `response` schema and fail loudly on a mismatch,
   * so that the OpenAPI document cannot drift from what is sent. On in tests.
   */
  validateResponses?: boolean;
}

function authenticate(accessTokens: AccessTokenIssuer, sessionVersions: SessionVersions | undefined): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    let auth = match?.[1] ? await accessTokens.verify(match[1]) : null;
    if (auth && sessionVersions && (await sessionVersions(auth)) !== auth.tokenVersion) auth = null;
    if (!auth) {
      sendError(res, UNAUTHORIZED.status, UNAUTHORIZED.message, UNAUTHORIZED.items);
      return;
    }
    req.auth = auth;
    next();
  };
}

function authorize(route: Route): RequestHandler {
  return (req, res, next) => {
    const { access } = route;
    if (access.kind === 'actions' && !roleAllows(req.auth!.role, access.actions)) {
      sendError(res, FORBIDDEN.status, FORBIDDEN.message, FORBIDDEN.items);
      return;
    }
    next();
  };
}

/** At most `limit` requests a minute per caller (app or user), counted in `store` when given (shared by every API process). */
export function subjectRateLimit(limit: number, store: Store | undefined): RequestHandler {
  return rateLimit({
    windowMs: 60_000,
    limit,
    ...(store ? { store } : {}),
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: (req) => req.auth!.subjectId,
    handler: (_req, res) =>
      sendError(res, 429, 'Too many requests', [{ code: ERROR_CODES.rate_limited, message: 'Rate limit exceeded; retry after the time in Retry-After' }]),
  });
}

/** What the error item of a query parameter the route does not take says. */
export const UNKNOWN_QUERY_PARAMETER = 'is not a query parameter this request takes';

/**
 * A check that refuses the query parameters a route does not take, each by its path (`query.sort`), with
 * the names it does take: a misspelt filter or page size would otherwise be ignored, and the answer would
 * look right while it is not what was asked.
 */
function queryNamesCheck(route: Route): (req: Request) => void {
  const { names, deep } = queryParameterNames(route);
  const takes = names.size === 0 ? 'it takes none' : `it takes ${[...names].sort().join(', ')}`;
  const known = (key: string) => names.has(key) || deep.some((name) => key.startsWith(`${name}[`) || key.startsWith(`${name}.`));
  return (req) => {
    const unknown = Object.keys((req.query ?? {}) as Record<string, unknown>).filter((key) => !known(key));
    if (unknown.length > 0) throw AppError.invalid(unknown.map((key) => ({ path: `query.${key.slice(0, 100)}`, message: `${UNKNOWN_QUERY_PARAMETER}; ${takes}` })));
  };
}

function parsePart(route: Route, req: Request, part: 'params' | 'query' | 'body'): unknown {
  const schema = route[part];
  if (!schema) {
    if (part === 'body' && takesNoBody(route)) refuseBody(req.body);
    return undefined;
  }
  // Postgres stores no NUL character and no unpaired surrogate: such text is refused here, by its path,
  // but for the items of a batch, each of which fails alone.
  const textChecked = part === 'body' && route.itemsJudgedAlone ? { ...(req.body as object), [route.itemsJudgedAlone]: undefined } : req[part];
  const unstorable = storableJsonProblem(textChecked);
  if (unstorable) throw AppError.validation(unstorable.problem, [part, ...unstorable.path].join('.'));
  // A property the body's schema does not name would be dropped unseen: it is refused by its path instead.
  const result = check(schema, req[part] ?? {}, { closed: part === 'body' });
  if (result.ok) return result.data;
  const problems = part === 'query' ? result.problems.map((problem) => repeatedParameter(schema, req.query, problem) ?? problem) : result.problems;
  throw AppError.invalid(problems.map(({ path, message }) => ({ path: [part, ...path].join('.'), message })));
}

/**
 * A parameter that takes one value, sent more than once (`limit=5&limit=6`), reaches its schema as an
 * array, whose own message ("expected number, received NaN") would not say what is wrong.
 */
function repeatedParameter(schema: z.ZodType, query: unknown, problem: Problem): Problem | undefined {
  const [key, ...deeper] = problem.path;
  const value = key === undefined || deeper.length > 0 ? undefined : (query as Record<string, unknown>)[key];
  const property = Array.isArray(value) ? propertySchema(schema, key!) : undefined;
  if (!property || takesArray(property)) return undefined;
  return { path: problem.path, message: `is given ${(value as unknown[]).length} times; it takes one value` };
}

/** The body of a route that takes none: absent or `{}`, else refused by the path of what was sent. */
function refuseBody(body: unknown): void {
  if (body === undefined) return;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw AppError.validation('this request takes no body, or an empty object', 'body');
  const names = Object.keys(body);
  if (names.length > 0) throw AppError.invalid(names.slice(0, 20).map((name) => ({ path: `body.${name.slice(0, 100)}`, message: `${name.slice(0, 100)} ${UNKNOWN_PROPERTY}` })));
}

/** A handler's answer that its own `response` (or `accepted`) schema rejects: a bug in the route, never the caller's fault. */
function assertDocumented(route: Route, data: unknown, schema = route.response): void {
  const result = schema?.safeParse(data);
  if (result && !result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(data)'}: ${issue.message}`).join('; ');
    throw new InvariantError(`${route.method.toUpperCase()} ${route.path} answered outside its response schema: ${problems}`);
  }
}

function handle(route: Route, validateResponses: boolean): RequestHandler {
  const checkQueryNames = queryNamesCheck(route);
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      checkQueryNames(req);
      const params = parsePart(route, req, 'params');
      const query = parsePart(route, req, 'query');
      const body = parsePart(route, req, 'body');
      let status = route.successStatus ?? 200;
      const setSuccessStatus = (override: 200 | 201) => {
        status = override;
      };
      const answer = await route.handler({ params, query, body, auth: req.auth as AuthContext, req, res, setSuccessStatus, accepted: acceptedAnswer });
      if (route.rawResponse) return;
      if (isAccepted(answer)) {
        if (validateResponses) assertDocumented(route, answer.data, route.accepted);
        sendSuccess(res, answer.data ?? null, 202);
        return;
      }
      if (validateResponses) assertDocumented(route, answer);
      sendSuccess(res, answer ?? null, status);
    } catch (error) {
      next(error);
    }
  };
}

export function buildRouter(routes: readonly Route[], options: RouterOptions): Router {
  const router = Router();
  const rateLimiter = subjectRateLimit(options.rateLimitPerMinute, options.rateLimitStore);
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method.toUpperCase()} ${route.path}`;
    if (seen.has(key)) throw new AppError('internal', `Route declared twice: ${key}`);
    seen.add(key);
    const checks: RequestHandler[] = route.access.kind === 'public' ? [] : [authenticate(options.accessTokens, options.sessionVersions), rateLimiter, authorize(route)];
    const bodyType = route.body || takesNoBody(route) ? [requireBodyType(JSON_TYPES)] : [];
    // Every authenticated POST creates something or moves state: a retry with its Idempotency-Key is safe.
    const idempotent =
      route.method !== 'post' || route.access.kind === 'public' ? [] : [route.ownIdempotency ? checkIdempotencyKey : idempotentRoute(options.idempotency, key)];
    const chain = [...checks, ...bodyType, ...(route.before ?? []), ...idempotent, handle(route, options.validateResponses ?? false)];
    router[route.method](expressPath(route.path), ...chain);
  }
  return router;
}
