import type { Request } from 'express';

const RAW_BODY = Symbol('raw body');

/**
 * `verify` hook of express.json around another: keeps the bytes of the body as they arrived beside their
 * parse (a reference, not a copy), for routes that must check a signature made over them (a payment
 * gateway's webhooks).
 */
export function keepingRawBody<V extends (req: Request, res: unknown, raw: Buffer) => void>(verify: V): V {
  return ((req: Request, res: unknown, raw: Buffer) => {
    verify(req, res, raw);
    (req as Request & { [RAW_BODY]?: Buffer })[RAW_BODY] = raw;
  }) as V;
}

/** The body's bytes as they arrived; undefined when there was no JSON body. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return (req as Request & { [RAW_BODY]?: Buffer })[RAW_BODY];
}
