import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import { z } from 'zod';
import { ERROR_CODES } from '../../domain/errors';
import { sendError } from '../../http/envelope';
import { documented } from '../../http/openapi';
import { defineRoute, publicAccess, type Route } from '../../http/route';
import { emailAddress, reference } from '../../http/schemas';
import type { AppDeps } from '../../deps';

const sessionSchema = z.object({
  accessToken: z.string(),
  refreshToken: z.string(),
  expiresIn: z.number().int().describe('Access token lifetime in seconds'),
});

/**
 * Failed logins are limited per client address and identifier, and per address across identifiers (so
 * that one address cannot try a few passwords on every account); successful ones do not count, so a
 * legitimate integrator is never locked out by its own traffic.
 */
function failedLoginLimiter(deps: AppDeps, name: string, limit: number, keyOf: (req: Request) => string): RequestHandler {
  const store = deps.rateLimitStore?.(`failed-login-${name}`);
  return rateLimit({
    ...(store ? { store } : {}),
    windowMs: deps.config.LOGIN_FAILURE_WINDOW_SECONDS * 1000,
    limit,
    skipSuccessfulRequests: true,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    keyGenerator: keyOf,
    handler: (_req, res) =>
      sendError(res, 429, 'Too many failed logins', [
        { code: ERROR_CODES.rate_limited, message: 'Too many failed attempts; retry after the time in Retry-After' },
      ]),
  });
}

const addressOf = (req: Request) => ipKeyGenerator(req.ip ?? '');

const perIdentifier = (deps: AppDeps, identifierField: string) =>
  failedLoginLimiter(deps, identifierField, deps.config.LOGIN_MAX_FAILURES, (req) => {
    const identifier = String((req.body as Record<string, unknown> | undefined)?.[identifierField] ?? '').toLowerCase();
    return `${addressOf(req)}|${identifier}`;
  });

export function authRoutes(deps: AppDeps): Route[] {
  const { auth } = deps.services;

  // One counter per address for both login routes.
  const perAddress = failedLoginLimiter(deps, 'address', deps.config.LOGIN_MAX_FAILURES_PER_ADDRESS, addressOf);
  const login = { errors: { 401: 'Invalid credentials', 429: 'Too many failed logins from this address, for this identifier or in all; see Retry-After' } };
  return [
    documented(
      defineRoute({
        method: 'post',
        path: '/auth/login',
        summary: 'Admin login with e-mail and password',
        tag: 'Auth',
        access: publicAccess,
        before: [perAddress, perIdentifier(deps, 'email')],
        body: z.object({ email: emailAddress, password: reference(1024) }),
        response: sessionSchema,
        handler: async ({ body }) => auth.login(body.email, body.password),
      }),
      login,
    ),
    documented(
      defineRoute({
        method: 'post',
        path: '/auth/system-login',
        summary: 'Trade a clientKey and clientSecret for an access token and a refresh token',
        tag: 'Auth',
        access: publicAccess,
        before: [perAddress, perIdentifier(deps, 'clientKey')],
        body: z.object({ clientKey: reference(255), clientSecret: reference(255) }),
        response: sessionSchema,
        handler: async ({ body }) => auth.systemLogin(body.clientKey, body.clientSecret),
      }),
      login,
    ),
    documented(
      defineRoute({
        method: 'post',
        path: '/auth/refresh',
        summary: 'Rotate a refresh token: the presented one dies, a new pair is returned',
        tag: 'Auth',
        access: publicAccess,
        body: z.object({ refreshToken: reference(1024) }),
        response: sessionSchema,
        handler: async ({ body }) => auth.refresh(body.refreshToken),
      }),
      { errors: { 401: 'Invalid refresh token: unknown, expired, spent or revoked' } },
    ),
  ];
}
