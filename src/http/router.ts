import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import { AppError, ERROR_CODES } from '../domain/errors';
import { jsonTextProblem } from '../domain/storable';
import { sendError, sendSuccess } from './envelope';
import { zodToAppError } from './error-handler';
import { roleAllows } from './permissions';
import { expressPath, type AuthContext, type Route } from './route';
import type { AccessTokenIssuer } from '../modules/auth/access-tokens';

declare module 'express-serve-static-core' {
  interface Request {
    auth?: AuthContext;
  }
}

const UNAUTHORIZED = new AppError('unauthorized', 'Unauthorized', [{ code: ERROR_CODES.unauthorized, message: 'A valid bearer access token is required' }]);
const FORBIDDEN = new AppError('forbidden', 'Forbidden');

export interface RouterOptions {
  accessTokens: AccessTokenIssuer;
  rateLimitPerMinute: number;
  /** Shared counters for the per-token limit; this process's memory when absent. */
  rateLimitStore?: Store;
  /**
   * Check every answer against the route's documented `response` schema and fail loudly on a mismatch,
   * so that the OpenAPI document cannot drift from what is sent. On in tests.
   */
  validateResponses?: boolean;
}

function authenticate(accessTokens: AccessTokenIssuer): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const auth = match?.[1] ? await accessTokens.verify(match[1]) : null;
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

function perTokenRateLimit(limit: number, store: Store | undefined): RequestHandler {
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

function parsePart(route: Route, req: Request, part: 'params' | 'query' | 'body'): unknown {
  const schema = route[part];
  if (!schema) return undefined;
  // Postgres stores no NUL character and no unpaired surrogate: such text is refused here, by its path.
  const unstorable = jsonTextProblem(req[part]);
  if (unstorable) throw AppError.validation(unstorable.problem, [part, ...unstorable.path].join('.'));
  const result = schema.safeParse(req[part] ?? {});
  if (!result.success) throw zodToAppError(result.error, part);
  return result.data;
}

/** A handler's answer that its own `response` schema rejects: a bug in the route, never the caller's fault. */
function assertDocumented(route: Route, data: unknown): void {
  const result = route.response?.safeParse(data);
  if (result && !result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(data)'}: ${issue.message}`).join('; ');
    throw new Error(`${route.method.toUpperCase()} ${route.path} answered outside its response schema: ${problems}`);
  }
}

function handle(route: Route, validateResponses: boolean): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const params = parsePart(route, req, 'params');
      const query = parsePart(route, req, 'query');
      const body = parsePart(route, req, 'body');
      let status = route.successStatus ?? 200;
      const setSuccessStatus = (override: 200 | 201) => {
        status = override;
      };
      const data = await route.handler({ params, query, body, auth: req.auth as AuthContext, req, res, setSuccessStatus });
      if (route.rawResponse) return;
      if (validateResponses) assertDocumented(route, data);
      sendSuccess(res, data ?? null, status);
    } catch (error) {
      next(error);
    }
  };
}

export function buildRouter(routes: readonly Route[], options: RouterOptions): Router {
  const router = Router();
  const rateLimiter = perTokenRateLimit(options.rateLimitPerMinute, options.rateLimitStore);
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method.toUpperCase()} ${route.path}`;
    if (seen.has(key)) throw new AppError('internal', `Route declared twice: ${key}`);
    seen.add(key);
    const chain: RequestHandler[] =
      route.access.kind === 'public'
        ? [...(route.before ?? []), handle(route, options.validateResponses ?? false)]
        : [authenticate(options.accessTokens), rateLimiter, authorize(route), ...(route.before ?? []), handle(route, options.validateResponses ?? false)];
    router[route.method](expressPath(route.path), ...chain);
  }
  return router;
}
