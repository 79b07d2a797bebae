import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { InvariantError } from '../../domain/errors';
import { destinationKey, parseAllowedDestinations } from '../../security/allowed-destinations';

/**
 * Where webhooks may go. In production: https only, and never to a private, loopback, link-local or
 * otherwise non-public address, unless the host and port are listed; in development, anything, so that a
 * user can point an endpoint at a receiver on their own machine.
 */
export interface DestinationPolicy {
  httpsOnly: boolean;
  publicAddressesOnly: boolean;
  /** `host:port` pairs exempt from both rules (`WEBHOOK_ALLOWED_HOSTS`), normalised as `destinationKey` writes them. */
  allowedDestinations: ReadonlySet<string>;
}

/**
 * The refusal texts tenants see (API answers, the delivery log). They never name an address, nor tell a
 * name that resolves to an internal address from one that does not resolve at all: the worker's own log
 * has the details.
 */
export const REFUSED_NOT_PUBLIC = 'the destination is not allowed: it does not resolve to a public address';
export const REFUSED_NOT_HTTPS = 'the destination is not allowed: it must use https';

export function destinationPolicy(config: { NODE_ENV: string; WEBHOOK_ALLOWED_HOSTS?: string }): DestinationPolicy {
  const production = config.NODE_ENV === 'production';
  const { keys, problems } = parseAllowedDestinations(config.WEBHOOK_ALLOWED_HOSTS ?? '');
  // The configuration is checked when it is loaded; this guards direct callers.
  if (problems.length > 0) throw new InvariantError(`WEBHOOK_ALLOWED_HOSTS: ${problems.join('; ')}`);
  return { httpsOnly: production, publicAddressesOnly: production, allowedDestinations: new Set(keys) };
}

/** Why the URL may not receive webhooks, from its text alone; undefined when it may (its addresses are checked at each attempt). */
export function urlProblem(url: string, policy: DestinationPolicy): string | undefined {
  // As it is stored and shown: the parser would percent-encode a space or a letter of another script quietly.
  if (!/^[\x21-\x7e]+$/.test(url)) return 'the URL must be written in visible ASCII characters (percent-encode the others, punycode a host)';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the URL must be absolute';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'the URL must use http or https';
  if (parsed.username || parsed.password) return 'the URL must not carry credentials';
  const allowed = policy.allowedDestinations.has(destinationKey(parsed));
  if (policy.httpsOnly && parsed.protocol !== 'https:' && !allowed) return REFUSED_NOT_HTTPS;
  if (policy.publicAddressesOnly && !allowed && ipaddr.isValid(stripBrackets(parsed.hostname)) && !isPublic(stripBrackets(parsed.hostname))) return REFUSED_NOT_PUBLIC;
  return undefined;
}

const stripBrackets = (host: string) => host.replace(/^\[|\]$/g, '');

/** Only ordinary public unicast addresses (an IPv4-mapped IPv6 address counts as its IPv4 address). */
export function isPublic(address: string): boolean {
  return ipaddr.process(address).range() === 'unicast';
}

/** A refusal: `message` for tenants, `detail` (names, addresses) for the worker's log only. */
export class DestinationRefused extends Error {
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
  }
}

/**
 * A DNS lookup that refuses non-public addresses: the check happens on the very address connected to. In
 * production a name that does not resolve is refused in the same words as one that resolves to an
 * internal address, so that the delivery log cannot be used to map internal DNS.
 */
function guardedLookup(policy: DestinationPolicy, exempt: boolean): LookupFunction {
  const guarded = policy.publicAddressesOnly && !exempt;
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(guarded ? new DestinationRefused(REFUSED_NOT_PUBLIC, `${hostname} does not resolve: ${error.message}`) : error, '', 0);
      const list = addresses as dns.LookupAddress[];
      const refused = guarded ? list.find((entry) => !isPublic(entry.address)) : undefined;
      if (refused) return callback(new DestinationRefused(REFUSED_NOT_PUBLIC, `${hostname} resolves to ${refused.address}, which is not a public address`), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

export interface PostResult {
  statusCode: number | null;
  durationMs: number;
  /** The first 1 KB of the response body. */
  excerpt: string | null;
  /** Why no response came (refused destination, timeout, connection error), in words that name no address. */
  error: string | null;
  /** The same with its details (host names, addresses, the system's message): for the worker's log, never stored. */
  detail: string | null;
}

/**
 * What tenants read of a failed connection: its kind and the system's error code, never the system's
 * message, which names addresses ("connect ECONNREFUSED 10.0.0.7:443").
 */
export function publicReason(error: Error): string {
  if (error instanceof DestinationRefused) return error.message;
  const code = (error as NodeJS.ErrnoException).code;
  const suffix = code ? ` (${code})` : '';
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NODATA':
    case 'EAI_NONAME':
      return `the host name could not be resolved${suffix}`;
    case 'ECONNREFUSED':
      return `the connection was refused${suffix}`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `the connection was closed before an answer came${suffix}`;
    case 'ETIMEDOUT':
    case 'ENETUNREACH':
    case 'EHOSTUNREACH':
    case 'EADDRNOTAVAIL':
      return `the destination could not be reached${suffix}`;
    case undefined:
      return 'the request failed';
    default:
      return /CERT|TLS|SSL/.test(code) ? `the TLS connection failed${suffix}` : `the request failed${suffix}`;
  }
}

const EXCERPT_BYTES = 1024;

class AnswerTimeout extends Error {}

/** POSTs `body` with `headers`, within `timeoutMs`, following no redirect. Never throws: the outcome says what happened. */
export function postJson(url: string, headers: Record<string, string>, body: string, policy: DestinationPolicy, timeoutMs: number): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const problem = urlProblem(url, policy);
  if (problem) return Promise.resolve({ statusCode: null, durationMs: 0, excerpt: null, error: problem, detail: `${url}: ${problem}` });
  const parsed = new URL(url);
  const client = parsed.protocol === 'https:' ? https : http;
  const failed = (error: Error, statusCode: number | null = null): PostResult => ({
    statusCode,
    durationMs: elapsed(),
    excerpt: null,
    error: error instanceof AnswerTimeout ? error.message : publicReason(error),
    detail: error instanceof DestinationRefused ? error.detail : error.message,
  });
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(result);
    };
    const timedOut = () => request.destroy(new AnswerTimeout(`no answer within ${timeoutMs} ms`));
    // The whole exchange, not only a silent socket, has the time limit.
    const deadline = setTimeout(timedOut, timeoutMs);
    const request = client.request(
      parsed,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'billing-webhooks/1', ...headers },
        lookup: guardedLookup(policy, policy.allowedDestinations.has(destinationKey(parsed))),
        // A connection of its own: a pooled one would skip the lookup, and with it the check of the address.
        agent: false,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => settle({ statusCode: response.statusCode ?? null, durationMs: elapsed(), excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'), error: null, detail: null });
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          // The first 1 KB is all that is kept: the rest is not waited for.
          if (size >= EXCERPT_BYTES) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', (error) => settle(failed(error, response.statusCode ?? null)));
      },
    );
    request.on('timeout', timedOut);
    request.on('error', (error) => settle(failed(error)));
    request.end(body);
  });
}
