import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { createCustomerEntity } from './support/fixtures';
import { shrinkWithin } from '../support/properties';

/**
 * The usage query against a model of it written here: random events, meter definitions, windows, time
 * zones, groups and filters, each run in a customer of its own.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'meter-query-model');
});
afterAll(() => api.close());

interface Event {
  cents: number;
  at: number;
  k1?: string | number;
  x?: string;
}

type Filter = { key: string; operator: 'in' | 'not_in'; values: string[] } | { key: string; operator: 'exists' | 'not_exists' };
type Size = 'hour' | 'day' | 'month';

const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Calcutta', 'Australia/Lord_Howe'];
/** Around the spring and autumn clock changes of 2026. */
const STARTS = [Date.parse('2026-03-26T00:00:00Z'), Date.parse('2026-10-22T00:00:00Z')];
const HOUR = 3_600_000;

const FILTERS: Filter[] = [
  { key: 'k1', operator: 'in', values: ['a'] },
  { key: 'k1', operator: 'in', values: ['a', '5'] },
  { key: 'k1', operator: 'not_in', values: ['b'] },
  { key: 'k2.x', operator: 'exists' },
  { key: 'k1', operator: 'not_exists' },
];

const decimal = (cents: number) => {
  const sign = cents < 0 ? '-' : '';
  const whole = Math.floor(Math.abs(cents) / 100);
  const fraction = String(Math.abs(cents) % 100).padStart(2, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction ? `.${fraction}` : ''}`;
};

/** The value at a key, as text, or undefined when absent. */
const valueAt = (event: Event, key: string): string | undefined => (key === 'k1' ? (event.k1 === undefined ? undefined : String(event.k1)) : event.x);

function holds(event: Event, filter: Filter): boolean {
  const value = valueAt(event, filter.key);
  switch (filter.operator) {
    case 'in':
      return value !== undefined && filter.values.includes(value);
    case 'not_in':
      return value === undefined || !filter.values.includes(value);
    case 'exists':
      return value !== undefined;
    case 'not_exists':
      return value === undefined;
  }
}

/** The local wall-clock hour, day or month of an instant in a zone, as text. */
function localWindow(instant: number, timeZone: string, size: Size): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(instant)).map((part) => [part.type, part.value]),
  );
  return size === 'month' ? `${parts.year}-${parts.month}` : size === 'day' ? `${parts.year}-${parts.month}-${parts.day}` : `${parts.year}-${parts.month}-${parts.day}T${parts.hour}`;
}

function fold(aggregation: string, events: Event[]): string {
  switch (aggregation) {
    case 'sum':
      return decimal(events.reduce((total, event) => total + event.cents, 0));
    case 'count':
      return String(events.length);
    case 'max':
      return decimal(Math.max(...events.map((event) => event.cents)));
    default:
      return String(new Set(events.map((event) => valueAt(event, 'k1')).filter((value) => value !== undefined)).size);
  }
}

const scenario = fc.record({
  aggregation: fc.constantFrom('sum', 'count', 'max', 'unique_count'),
  dimensions: fc.subarray(['k1', 'k2.x']),
  filters: fc.subarray(FILTERS, { maxLength: 2 }),
  events: fc.array(
    fc.record({
      cents: fc.integer({ min: -500, max: 100_000 }),
      at: fc.integer({ min: 0, max: 5 * 24 * 60 }),
      k1: fc.option(fc.constantFrom<string | number>('a', 'b', 5), { nil: undefined, freq: 3 }),
      x: fc.option(fc.constantFrom('p', 'q'), { nil: undefined, freq: 3 }),
    }),
    { minLength: 1, maxLength: 25 },
  ),
  start: fc.constantFrom(...STARTS),
  fromHour: fc.integer({ min: 0, max: 48 }),
  hours: fc.integer({ min: 1, max: 240 }),
  windowSize: fc.constantFrom<Size>('hour', 'day', 'month'),
  timeZone: fc.constantFrom(...ZONES),
  byCustomer: fc.boolean(),
  narrow: fc.option(fc.constantFrom('a', 'b', 'p', '5'), { nil: undefined }),
});

describe('the usage query, against its model', () => {
  it('when events, meters, windows, zones, groups and filters are random, then each row is what the model folds', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const { customerId, entityId } = await createCustomerEntity(api, tenant);
        const metric = `model_${randomUUID().slice(0, 8)}`;
        const meter = await api
          .http()
          .post('/meters')
          .set(bearer(tenant.adminToken))
          .send({ name: metric, metric, aggregation: s.aggregation, ...(s.aggregation === 'unique_count' ? { uniqueField: 'k1' } : {}), groupBy: s.dimensions, filters: s.filters })
          .expect(201);
        const events = s.events.map((event, index) => ({ ...event, at: s.start + event.at * 60_000 + index }));
        const batch = events.map((event) => ({
          CustomerEntityId: entityId,
          metric,
          value: decimal(event.cents),
          timestamp: new Date(event.at).toISOString(),
          metadata: { ...(event.k1 === undefined ? {} : { k1: event.k1 }), ...(event.x === undefined ? {} : { k2: { x: event.x } }) },
        }));
        await api.http().post('/events/batch').set(bearer(tenant.systemToken)).send({ events: batch }).expect(200);

        const from = s.start + s.fromHour * HOUR;
        const to = from + Math.min(s.hours, s.windowSize === 'hour' ? 31 * 24 : 366 * 24) * HOUR;
        const narrowKey = s.narrow === undefined ? undefined : s.narrow === 'p' ? 'k2.x' : 'k1';
        const narrowing = narrowKey !== undefined && s.dimensions.includes(narrowKey) ? { key: narrowKey, values: [s.narrow as string] } : undefined;
        const groups = [...s.dimensions, ...(s.byCustomer ? ['customer'] : [])];
        const params = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), windowSize: s.windowSize, timezone: s.timeZone, customerId, limit: '1000' });
        for (const group of groups) params.append('groupBy', group);
        if (narrowing) params.append(`filter.${narrowing.key}`, narrowing.values.join(','));
        const res = await api.http().get(`/meters/${meter.body.data.id}/query?${params.toString()}`).set(bearer(tenant.systemToken));
        expect([res.status, res.body.errors]).toEqual([200, undefined]);

        const counted = events.filter(
          (event) => event.at >= from && event.at < to && s.filters.every((filter) => holds(event, filter)) && (!narrowing || narrowing.values.includes(valueAt(event, narrowing.key) ?? '')),
        );
        const keyOf = (window: string, values: Array<string | null>) => JSON.stringify([window, ...values]);
        const model = new Map<string, Event[]>();
        for (const event of counted) {
          const key = keyOf(localWindow(event.at, s.timeZone, s.windowSize), [...s.dimensions.map((dimension) => valueAt(event, dimension) ?? null), ...(s.byCustomer ? [customerId] : [])]);
          model.set(key, [...(model.get(key) ?? []), event]);
        }
        const expected = new Map([...model].map(([key, folded]) => [key, fold(s.aggregation, folded)]));
        const rows = res.body.data.rows as Array<{ windowStart: string; groups: Record<string, string | null>; value: string }>;
        const actual = new Map(rows.map((row) => [keyOf(localWindow(Date.parse(row.windowStart), s.timeZone, s.windowSize), groups.map((group) => row.groups[group] ?? null)), row.value]));
        expect(actual).toEqual(expected);
        expect(res.body.data.total).toBe(expected.size);
        const starts = rows.map((row) => Date.parse(row.windowStart));
        expect(starts).toEqual([...starts].sort((a, b) => a - b));
      }),
      { numRuns: 25, seed: 20261127, ...shrinkWithin(180_000) },
    );
  });
});
