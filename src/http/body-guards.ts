import type { Request, RequestHandler } from 'express';
import { AppError, ERROR_CODES } from '../domain/errors';

/** The content types the JSON parser reads; any other body on a JSON route is refused with 415. */
export const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * The deepest nesting of arrays and objects in a JSON text, or `limit + 1` as soon as it goes past
 * `limit`. One pass over the raw bytes, before `JSON.parse`, so that a body nested thousands deep never
 * reaches code that walks it recursively.
 */
export function jsonDepthExceeds(raw: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i += 1) {
    const byte = raw[i];
    if (inString) {
      if (byte === 0x5c) i += 1; // backslash: skip the escaped character
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x7b || byte === 0x5b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (byte === 0x7d || byte === 0x5d) {
      depth -= 1;
    }
  }
  return false;
}

/** `verify` hook of express.json: a body nested deeper than `limit` fails with type `entity.too.deep` (a 400). */
export function boundedJsonDepth(limit: number): (req: Request, res: unknown, raw: Buffer) => void {
  return (_req, _res, raw) => {
    if (jsonDepthExceeds(raw, limit)) {
      throw Object.assign(new Error(`JSON nested deeper than ${limit} levels`), { type: 'entity.too.deep' });
    }
  };
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * A route that reads a JSON body answers 415 to a body of another type, instead of ignoring it and
 * complaining that required fields are missing. Routes that take uploads declare their own types.
 */
export function requireBodyType(types: readonly string[]): RequestHandler {
  return (req, _res, next) => {
    if (hasBody(req) && !req.is([...types])) {
      next(
        new AppError('unsupported_media_type', 'Unsupported media type', [
          { code: ERROR_CODES.unsupported_media_type, path: 'headers.content-type', message: `The body must be sent as ${types.join(' or ')}` },
        ]),
      );
      return;
    }
    next();
  };
}
