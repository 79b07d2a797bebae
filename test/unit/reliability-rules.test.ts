import { ServiceError } from '@temporalio/client';
import fc from 'fast-check';
import { trustProxySetting } from '../../src/app';
import { isDatabaseUnavailable } from '../../src/db/errors';
import { storableEvent } from '../../src/domain/usage-event';
import { parseUsageEvent } from '../../src/modules/usage/usage.schemas';
import { jsonDepthExceeds } from '../../src/http/body-guards';
import { isFinalAnswer } from '../../src/modules/idempotency/idempotency.service';
import { isTemporalUnavailable } from '../../src/temporal/client';

/** Nesting depth as JSON.parse sees it. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('JSON depth, counted on the raw bytes before parsing', () => {
  it('agrees with the depth of the parsed value, whatever strings, escapes and brackets inside strings it holds', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 1, max: 14 }), (value, limit) => {
        const raw = Buffer.from(JSON.stringify(value));
        expect(jsonDepthExceeds(raw, limit)).toBe(depthOf(value) > limit);
      }),
    );
  });

  it('refuses 5,000 levels without recursing', () => {
    expect(jsonDepthExceeds(Buffer.from('['.repeat(5000) + ']'.repeat(5000)), 32)).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(JSON.stringify({ text: '[[[[["\\\\' })), 2)).toBe(false);
  });
});

describe('TRUST_PROXY', () => {
  it.each([
    ['false', false],
    ['0', false],
    ['true', true],
    ['2', 2],
    ['loopback', 'loopback'],
    ['10.0.0.0/8, 172.30.250.0/24', '10.0.0.0/8, 172.30.250.0/24'],
  ])('%s becomes Express\'s trust proxy %p', (setting, expected) => {
    expect(trustProxySetting(setting)).toEqual(expected);
  });
});

describe('idempotent answers', () => {
  it('keeps every 2xx but 202 and every 4xx; never a 5xx, so that a retry can run again', () => {
    expect([200, 201, 400, 404, 409, 413, 415, 422].every(isFinalAnswer)).toBe(true);
    expect([202, 500, 502, 503].some(isFinalAnswer)).toBe(false);
  });
});

describe('a usage event with text Postgres cannot store', () => {
  it('fails alone with its reason and path, and a storable event passes through untouched', () => {
    const bad = { CustomerEntityId: 'ent_1', metric: 'api\u0000calls', value: 1, timestamp: '2026-11-01T00:00:00Z' };
    const stored = storableEvent(bad);
    expect(JSON.stringify(stored)).not.toContain('\\u0000');
    expect(parseUsageEvent(stored)).toEqual({ ok: false, error: 'metric must not contain a NUL character' });
    const lone = storableEvent({ ...bad, metric: 'ok', metadata: { note: '\ud800' } });
    expect(parseUsageEvent(lone)).toMatchObject({ ok: false, error: expect.stringMatching(/^metadata\.note /) });
    const good = { ...bad, metric: 'api_calls' };
    expect(storableEvent(good)).toBe(good);
  });

  it('takes timestamps of the first century as they are (not as 1900 to 1999)', () => {
    const early = { CustomerEntityId: 'ent_1', metric: 'm', value: 1, timestamp: '0047-04-19T02:22:54Z' };
    expect(parseUsageEvent(early)).toMatchObject({ ok: true, event: { timestamp: new Date('0047-04-19T02:22:54Z') } });
    expect(parseUsageEvent({ ...early, timestamp: '0047-02-29T00:00:00Z' })).toMatchObject({ ok: false });
  });
});

describe('dependencies that are down', () => {
  it('tells a Postgres that is away from one that refuses a statement', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('x'), { name: 'KnexTimeoutError' }))).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('numeric field overflow'), { code: '22003' }))).toBe(false);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
  });

  it('tells a Temporal that is away from one that answered', () => {
    const grpc = (code: number) => Object.assign(new Error(`grpc ${code}`), { code, details: '', metadata: {} });
    expect(isTemporalUnavailable(new ServiceError('Failed to start Workflow', { cause: grpc(14) }))).toBe(true);
    expect(isTemporalUnavailable(grpc(4))).toBe(true);
    expect(isTemporalUnavailable(new ServiceError('Failed', { cause: grpc(6) }))).toBe(false);
    expect(isTemporalUnavailable(new Error('something else'))).toBe(false);
  });
});
