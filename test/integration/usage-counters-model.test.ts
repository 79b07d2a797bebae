import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { aggregateUsage, counterDaysSince, type CounterDay, type MetadataFilter } from '../../src/modules/usage';
import { createModelWorld, type ModelWorld } from './support/model-world';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { shrinkWithin } from '../support/properties';
import { CHUNK_SIZE } from '../../src/modules/usage/usage.repository';

/**
 * Usage counters against raw events: random events ingested through the real path, a random meter and
 * feature filters, the organisation in a random time zone, entitlements made before and after the events,
 * then random edits, deletions and a change of the meter's filters. After each step, every counter's days
 * (each the sum of its stripes, as every read takes them) equal the raw events folded per customer and
 * calendar day of its zone (the oracle: the one usage aggregation over raw events, by day). The first
 * events go as three batches at once, which group commit writes as chunks side by side, each into a stripe
 * of its own. Replay a failure with USAGE_COUNTERS_SEED.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'usage-counters-model');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const admin = () => bearer(tenant.adminToken);
const MINUTE = 60_000;
/** Three days around Berlin's spring change and Lord Howe's autumn one. */
const START = Date.parse('2026-03-28T00:00:00Z');
const ZONES = ['UTC', 'Europe/Berlin', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/New_York'];

const FILTERS: MetadataFilter[] = [
  { key: 'k1', operator: 'in', values: ['a', '5'] },
  { key: 'k1', operator: 'not_in', values: ['b'] },
  { key: 'k2.x', operator: 'exists' },
  { key: 'k1', operator: 'not_exists' },
];

const decimal = (cents: number) => `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;

const metadataArb = fc.record({ k1: fc.constantFrom<string | number>('a', 'b', 5), k2: fc.record({ x: fc.constantFrom('p', 'q') }, { requiredKeys: [] }) }, { requiredKeys: [] });

const eventArb = fc.record({
  cents: fc.integer({ min: -500, max: 100_000 }),
  minute: fc.integer({ min: 0, max: 3 * 24 * 60 - 1 }),
  entity: fc.integer({ min: 0, max: 2 }),
  metadata: metadataArb,
});

const editArb = fc.record({
  pick: fc.nat(),
  kind: fc.constantFrom('value', 'timestamp', 'metadata', 'delete'),
  cents: fc.integer({ min: 0, max: 5000 }),
  minutes: fc.integer({ min: -900, max: 900 }),
  metadata: metadataArb,
});

const scenarioArb = fc.record({
  zone: fc.constantFrom(...ZONES),
  aggregation: fc.constantFrom('sum', 'count'),
  meterFilters: fc.subarray(FILTERS, { maxLength: 1 }),
  featureFilters: fc.subarray(FILTERS, { maxLength: 2 }),
  before: fc.array(eventArb, { minLength: 1, maxLength: 25 }),
  after: fc.array(eventArb, { maxLength: 25 }),
  edits: fc.array(editArb, { maxLength: 5 }),
  refilter: fc.subarray(FILTERS, { maxLength: 1 }),
});

type World = ModelWorld;
const createWorld = () => createModelWorld(api, tenant, 'counted');

/**
 * The events as `batches` batches (by turns), posted at once. With more than one, the first batch opens with
 * a chunk of events of a metric nothing counts, so that its own events are its second chunk, written beside
 * the first in a stripe of its own whatever the timing of the batches (which group commit may take one by one).
 */
async function ingest(world: World, events: ReadonlyArray<{ cents: number; minute: number; entity: number; metadata: Record<string, unknown> }>, batches = 1): Promise<void> {
  const body = events.map((event) => ({ CustomerEntityId: world.entities[event.entity]!, metric: world.metric, value: decimal(event.cents), timestamp: new Date(START + event.minute * MINUTE).toISOString(), metadata: event.metadata }));
  const parts = Array.from({ length: batches }, (_, part) => body.filter((_, index) => index % batches === part)).filter((part) => part.length > 0);
  if (batches > 1 && parts[0]) {
    const filler = Array.from({ length: CHUNK_SIZE }, (_, index) => ({ CustomerEntityId: world.entities[0]!, metric: `${world.metric}_uncounted`, value: '1', timestamp: new Date(START + index * MINUTE).toISOString(), metadata: {} }));
    parts[0] = [...filler, ...parts[0]];
  }
  const answers = await Promise.all(parts.map((part) => api.http().post('/events/batch').set(system()).send({ events: part })));
  expect(answers.map((res) => [res.status, res.body.data?.summary?.success])).toEqual(parts.map((part) => [200, part.length]));
}

/** Day rows found in a stripe other than 0: the chunks written side by side did take stripes of their own. */
let stripedRows = 0;

/** Every counter of the world's customers, day for day, as the raw events fold per customer and local day. */
async function countersMatchEvents(world: World, meterId: string, featureFilters: readonly MetadataFilter[]): Promise<number> {
  const meter = await api.db('meters').where({ id: meterId }).first();
  const counters = await api.db('usage_counters').whereIn('customer_id', world.customers).where({ meter_id: meterId });
  expect(counters).toHaveLength(2);
  let days = 0;
  for (const counter of counters) {
    const read = await api.db('usage_counters as c').where('c.id', counter.id).first(api.db.raw('? AS days', [counterDaysSince(api.db, 'c.id', api.db.raw("'-infinity'::date"))]));
    const stored = (read.days as CounterDay[]).map(([day, value]) => ({ day, value }));
    const [striped] = await api.db('usage_counter_days').where({ counter_id: counter.id }).where('stripe', '>', 0).count<Array<{ count: string }>>({ count: '*' });
    stripedRows += Number(striped?.count ?? 0);
    const entities = world.entities.filter((_, index) => (index < 2 ? world.customers[0] : world.customers[1]) === counter.customer_id);
    const folded = await aggregateUsage(api.db, {
      organisationId: tenant.organisationId,
      metric: meter.metric,
      spec: { aggregation: meter.aggregation, uniqueField: null, filters: [...meter.filters, ...featureFilters] },
      members: entities.map((customerEntityId) => ({ key: 'all', customerEntityId, from: null, to: null })),
      byPeriod: 'day',
      timeZone: counter.time_zone,
    });
    const expected = folded.map((group) => ({ day: group.period, value: group.value }));
    expect(stored.map((row: { day: string; value: string }) => ({ day: row.day, value: String(Number(row.value)) }))).toEqual(expected.map((row) => ({ day: row.day, value: String(Number(row.value)) })));
    days += stored.length;
  }
  return days;
}

let daysCompared = 0;

describe('usage counters, against raw events', () => {
  it('when events, filters, zones, edits, deletions and meter changes are random, then each counter holds its customer\'s usage per local day', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const world = await createWorld();
        await api.http().put('/organisation/settings').set(admin()).send({ timezone: s.zone }).expect(200);
        const meter = await api.http().post('/meters').set(admin()).send({ name: world.metric, metric: world.metric, aggregation: s.aggregation, filters: s.meterFilters }).expect(201);
        const featureKey = `f-${randomUUID().slice(0, 8)}`;
        await api.http().post('/features').set(admin()).send({ key: featureKey, name: featureKey, meterId: meter.body.data.id, filters: s.featureFilters }).expect(201);
        // The first customer's counter is made before any event, the second's after the first events.
        await api.http().post(`/customers/${world.customers[0]}/entitlements`).set(system()).send({ featureKey, type: 'metered', limit: 10, usagePeriod: 'day' }).expect(201);
        await ingest(world, s.before, 3);
        await api.http().post(`/customers/${world.customers[1]}/entitlements`).set(system()).send({ featureKey, type: 'metered', limit: 10, usagePeriod: 'week' }).expect(201);
        await ingest(world, s.after);
        daysCompared += await countersMatchEvents(world, meter.body.data.id, s.featureFilters);

        const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric: world.metric }).orderBy('id').select('id', 'timestamp');
        for (const edit of s.edits) {
          const target = stored[edit.pick % stored.length];
          if (!target) break;
          if (edit.kind === 'delete') {
            await api.http().delete(`/usage/${target.id}`).set(system()).expect(200);
            stored.splice(stored.indexOf(target), 1);
            continue;
          }
          const body =
            edit.kind === 'value'
              ? { value: decimal(edit.cents) }
              : edit.kind === 'timestamp'
                ? { timestamp: new Date(new Date(target.timestamp).getTime() + edit.minutes * MINUTE).toISOString() }
                : { metadata: edit.metadata };
          const res = await api.http().put(`/usage/${target.id}`).set(system()).send(body);
          expect([res.status, res.body.errors]).toEqual([200, undefined]);
        }
        daysCompared += await countersMatchEvents(world, meter.body.data.id, s.featureFilters);

        // The meter's filters change (nothing billed it): the counters fold anew.
        await api.http().put(`/meters/${meter.body.data.id}`).set(admin()).send({ filters: s.refilter }).expect(200);
        daysCompared += await countersMatchEvents(world, meter.body.data.id, s.featureFilters);
      }),
      { numRuns: Number(process.env.USAGE_COUNTERS_RUNS ?? 10), ...shrinkWithin(180_000), ...(process.env.USAGE_COUNTERS_SEED ? { seed: Number(process.env.USAGE_COUNTERS_SEED) } : {}) },
    );
    await api.http().put('/organisation/settings').set(admin()).send({ timezone: 'UTC' }).expect(200);
    // The property is about counters that hold something, some of it in more than one stripe.
    expect(daysCompared).toBeGreaterThan(20);
    expect(stripedRows).toBeGreaterThan(0);
  }, 180_000);
});
