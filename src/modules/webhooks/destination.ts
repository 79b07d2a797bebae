import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may go. In production: https only, and never to a private, loopback, link-local or
 * otherwise non-public address, unless the host is listed; in development, anything, so that a user can
 * point an endpoint at a receiver on their own machine.
 */
export interface DestinationPolicy {
  httpsOnly: boolean;
  publicAddressesOnly: boolean;
  /** Hosts exempt from both rules (`WEBHOOK_ALLOWED_HOSTS`). */
  allowedHosts: ReadonlySet<string>;
}

export function destinationPolicy(config: { NODE_ENV: string; WEBHOOK_ALLOWED_HOSTS?: string }): DestinationPolicy {
  const production = config.NODE_ENV === 'production';
  const allowedHosts = new Set((config.WEBHOOK_ALLOWED_HOSTS ?? '').split(',').map((host) => host.trim().toLowerCase()).filter(Boolean));
  return { httpsOnly: production, publicAddressesOnly: production, allowedHosts };
}

/** Why the URL may not receive webhooks, from its text alone; undefined when it may (its addresses are checked at each attempt). */
export function urlProblem(url: string, policy: DestinationPolicy): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an http or https URL';
  if (parsed.username || parsed.password) return 'must not carry credentials';
  const allowed = policy.allowedHosts.has(parsed.hostname.toLowerCase());
  if (policy.httpsOnly && parsed.protocol !== 'https:' && !allowed) return 'must use https';
  if (policy.publicAddressesOnly && !allowed && ipaddr.isValid(stripBrackets(parsed.hostname)) && !isPublic(stripBrackets(parsed.hostname))) {
    return 'must not be a private, loopback or link-local address';
  }
  return undefined;
}

const stripBrackets = (host: string) => host.replace(/^\[|\]$/g, '');

/** Only ordinary public unicast addresses (an IPv4-mapped IPv6 address counts as its IPv4 address). */
export function isPublic(address: string): boolean {
  return ipaddr.process(address).range() === 'unicast';
}

export class DestinationRefused extends Error {}

/** A DNS lookup that refuses non-public addresses: the check happens on the very address connected to. */
function guardedLookup(policy: DestinationPolicy, host: string): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as dns.LookupAddress[];
      const exempt = policy.allowedHosts.has(host.toLowerCase());
      const refused = list.find((entry) => policy.publicAddressesOnly && !exempt && !isPublic(entry.address));
      if (refused) return callback(new DestinationRefused(`${hostname} resolves to ${refused.address}, which is not a public address`), '', 0);
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
  /** Why no response came (refused destination, timeout, connection error). */
  error: string | null;
}

const EXCERPT_BYTES = 1024;

/** POSTs `body` with `headers`, within `timeoutMs`, following no redirect. Never throws: the outcome says what happened. */
export function postJson(url: string, headers: Record<string, string>, body: string, policy: DestinationPolicy, timeoutMs: number): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const problem = urlProblem(url, policy);
  if (problem) return Promise.resolve({ statusCode: null, durationMs: 0, excerpt: null, error: `destination refused: the URL ${problem}` });
  const parsed = new URL(url);
  const client = parsed.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(result);
    };
    // The whole exchange, not only a silent socket, has the time limit.
    const deadline = setTimeout(() => request.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const request = client.request(
      parsed,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'billing-webhooks/1', ...headers },
        lookup: guardedLookup(policy, parsed.hostname),
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => settle({ statusCode: response.statusCode ?? null, durationMs: elapsed(), excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'), error: null });
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
        response.on('error', (error) => settle({ statusCode: response.statusCode ?? null, durationMs: elapsed(), excerpt: null, error: error.message }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => settle({ statusCode: null, durationMs: elapsed(), excerpt: null, error: error instanceof DestinationRefused ? `destination refused: ${error.message}` : error.message }));
    request.end(body);
  });
}
