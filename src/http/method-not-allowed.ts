import type { RequestHandler } from 'express';
import { AppError, ERROR_CODES } from '../domain/errors';
import { sendError } from './envelope';
import type { Route } from './route';

interface DeclaredPath {
  /** As the document declares it: `/customers/{id}`. */
  path: string;
  matches: RegExp;
  /** One flag per segment, true for a literal one: `/usage/bulk` is more specific than `/usage/{id}`. */
  literals: boolean[];
  allow: string;
}

/** `/customers/{id}` → a matcher of one path segment per parameter. */
function pathMatcher(path: string): RegExp {
  const pattern = path
    .split(/\{\w+\}/)
    .map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${pattern}/?$`, 'i');
}

/**
 * The methods of each declared path, as an `Allow` header says them: HEAD wherever GET is (Express answers
 * HEAD with GET's handler) and OPTIONS everywhere.
 */
function declaredPaths(routes: readonly Route[]): DeclaredPath[] {
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    byPath.set(route.path, methods);
  }
  return [...byPath].map(([path, methods]) => {
    if (methods.has('GET')) methods.add('HEAD');
    methods.add('OPTIONS');
    const literals = path.split('/').map((segment) => !/^\{\w+\}$/.test(segment));
    return { path, matches: pathMatcher(path), literals, allow: [...methods].sort().join(', ') };
  });
}

function moreSpecific(a: boolean[], b: boolean[]): boolean {
  const differs = a.findIndex((literal, i) => literal !== b[i]);
  return differs >= 0 && a[differs] === true;
}

/**
 * What `Allow` says for a request path: the methods of the declared path it names, the most specific one
 * when several match (`/usage/bulk` names the bulk route, not `/usage/{id}` with the id "bulk"), as the
 * OpenAPI document reads it. Undefined for a path the API does not declare.
 */
export function allowedMethods(routes: readonly Route[]): (path: string) => string | undefined {
  const declared = declaredPathFor(routes);
  return (path) => declared(path)?.allow;
}

/**
 * The declared path a request path names (`/customers/{id}` for `/customers/cus_1`), whatever its method:
 * what the metrics label a request refused before any route took it (a body too large, say).
 */
export function declaredTemplate(routes: readonly Route[]): (path: string) => string | undefined {
  const declared = declaredPathFor(routes);
  return (path) => declared(path)?.path;
}

function declaredPathFor(routes: readonly Route[]): (path: string) => DeclaredPath | undefined {
  const paths = declaredPaths(routes);
  return (path) => {
    let best: DeclaredPath | undefined;
    for (const candidate of paths) {
      if (candidate.matches.test(path) && (!best || moreSpecific(candidate.literals, best.literals))) best = candidate;
    }
    return best;
  };
}

/**
 * Mounted after the router and before the 404 handler: a request that reaches it matched no route, so when
 * its path is declared with other methods it answers 405 with the methods the path has in `Allow`
 * (RFC 9110 §15.5.6); any other request goes on to the 404 handler.
 */
export function methodNotAllowed(routes: readonly Route[]): RequestHandler {
  const allowFor = allowedMethods(routes);
  return (req, res, next) => {
    const allow = allowFor(req.path);
    if (!allow || allow.split(', ').includes(req.method)) return next();
    const error = new AppError('method_not_allowed', 'Method not allowed', [
      { code: ERROR_CODES.method_not_allowed, path: 'method', message: `${req.method} is not allowed on ${req.path}; allowed: ${allow}` },
    ]);
    res.setHeader('Allow', allow);
    sendError(res, error.status, error.message, error.items);
  };
}

/**
 * Answers OPTIONS on a declared path with 204 and the same `Allow` as a 405 would give. Mounted before the
 * router, it replaces Express's own answer, which lists the methods of every route whose pattern matches
 * (`GET /usage/{id}` for `/usage/bulk`) rather than those of the path the document declares.
 */
export function answerOptions(routes: readonly Route[]): RequestHandler {
  const allowFor = allowedMethods(routes);
  return (req, res, next) => {
    const allow = req.method === 'OPTIONS' ? allowFor(req.path) : undefined;
    if (!allow) return next();
    res.setHeader('Allow', allow);
    res.status(204).end();
  };
}
