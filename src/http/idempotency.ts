import { createHash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../domain/errors';
import type { IdempotencyService } from '../modules/idempotency';

/** Visible ASCII, 1 to 255 characters: a UUID, a ULID or any key of the caller's own making. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The request's Idempotency-Key, if any; a malformed one is a 400 naming the header. */
function keyOf(req: Request): string | undefined {
  const header = req.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
    throw AppError.validation('Idempotency-Key must be 1 to 255 visible ASCII characters', 'headers.idempotency-key');
  }
  return header;
}

/** For a route that keeps its keys itself: the header is checked here all the same, by the same rule. */
export const checkIdempotencyKey: RequestHandler = (req, _res, next) => {
  try {
    keyOf(req);
    next();
  } catch (error) {
    next(error);
  }
};

/** JSON with object keys sorted, so that the same request always has the same fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object' && !(value instanceof Buffer)) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** What makes two requests on one route the same request: path parameters, query, body and any uploaded file. */
export function requestFingerprint(req: Request): string {
  const file = req.file ? createHash('sha256').update(req.file.buffer).digest('hex') : null;
  return createHash('sha256')
    .update(canonical({ params: req.params, query: req.query, body: req.body as unknown, file, fileName: req.file?.originalname ?? null }))
    .digest('hex');
}

/**
 * Stripe-style idempotency for a state-changing route. With an `Idempotency-Key` header, the first
 * request runs and its final answer is stored; a retry with the same key and the same request gets that
 * answer back (with `Idempotent-Replayed: true`) and runs nothing; the same key with another request is
 * a 409. Keys are scoped to the caller's organisation and to the route, so they never meet keys the
 * system makes for itself (an invoice's payment), which live in the domain tables under their own scope.
 */
export function idempotentRoute(service: IdempotencyService, route: string): RequestHandler {
  return async (req, res, next) => {
    try {
      const key = keyOf(req);
      if (key === undefined) {
        next();
        return;
      }
      const ref = { organisationId: req.auth!.organisationId, route, key };
      const fingerprint = requestFingerprint(req);
      const begun = await service.begin(ref, fingerprint);
      if (!begun.run) {
        res.status(begun.status).setHeader('Idempotent-Replayed', 'true').json(begun.body);
        return;
      }
      const send = res.json.bind(res);
      res.json = (body: unknown) => {
        // The answer is stored before it is sent, so a retry that follows it finds it.
        service
          .finish(ref, fingerprint, begun.runToken, res.statusCode, body)
          .catch((error: unknown) => req.log?.warn({ err: error }, 'idempotency: answer not stored yet; it is stored once Postgres answers'))
          .finally(() => send(body));
        return res;
      };
      next();
    } catch (error) {
      next(error);
    }
  };
}
