import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { specOf } from '../../src/modules/meters';
import type { MeterRow } from '../../src/modules/meters/meters.repository';
import { addEventsToTotals, aggregateUsage, aggregateUsageWindows, lockRollups, readsRollups, type AggregationSpec, type UsageMember, type WindowSize } from '../../src/modules/usage';
import { sample } from '../support/prometheus-text';
import { rollupsAgainstEvents } from './support/rollup-oracle';
import { createModelWorld, type ModelWorld } from './support/model-world';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { shrinkWithin } from '../support/properties';

/**
 * Meter rollups against raw events: random events ingested through the real path, random meters, and every
 * query answered from the rollups as from the raw events (the oracle: the same query with the rollups left
 * out of the spec), also after random edits and deletions, and for a meter created after its events once
 * its backfill completed. Replay a failure with METER_ROLLUPS_SEED.
 */
let api: TestApi;
let tenant: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'meter-rollups-model');
});
afterAll(() => api.close());

const system = () => bearer(tenant.systemToken);
const MINUTE = 60_000;
/** Around the clock changes of New York (8 March 2026) and Berlin (29 March 2026). */
// Each span holds clock changes: New York's and Berlin's springs, Lord Howe's and Chatham's autumns (back into the middle of a local hour).
const STARTS = [Date.parse('2026-03-06T00:00:00Z'), Date.parse('2026-03-27T00:00:00Z'), Date.parse('2026-04-02T00:00:00Z')];
const ZONES = ['UTC', 'Asia/Kathmandu', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Pacific/Chatham'];
const KEYS = ['k1', 'k2.x'];

type Filter = { key: string; operator: 'in' | 'not_in'; values: string[] } | { key: string; operator: 'exists' | 'not_exists' };
const FILTERS: Filter[] = [
  { key: 'k1', operator: 'in', values: ['a', '5'] },
  { key: 'k1', operator: 'not_in', values: ['b'] },
  { key: 'k2.x', operator: 'exists' },
  { key: 'k1', operator: 'not_exists' },
];

const decimal = (cents: number) => `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;

/** A value past the 400 bytes a rollup keeps as text (250 characters of 2 bytes): kept as its digest. */
const LONG = 'ü'.repeat(250);

const metadataArb = fc.record(
  { k1: fc.constantFrom<string | number>('a', 'b', 5, 7.5, LONG), k2: fc.record({ x: fc.constantFrom('p', 'q') }, { requiredKeys: [] }) },
  { requiredKeys: [] },
);

const eventArb = fc.record({
  cents: fc.integer({ min: -500, max: 100_000 }),
  // Minutes over five days, on a grid of 13 instants: equal instants are frequent, so that latest's tie-break counts.
  minute: fc.integer({ min: 0, max: 12 }).map((step) => step * 557),
  entity: fc.integer({ min: 0, max: 2 }),
  metadata: metadataArb,
});

const meterArb = fc.record({
  aggregation: fc.constantFrom('sum', 'count', 'max', 'latest', 'unique_count'),
  groupBy: fc.shuffledSubarray(KEYS),
  filters: fc.subarray(FILTERS, { maxLength: 2 }),
});

/** A window's ends: mostly on quarter hours (rollups answer), sometimes off them (raw events answer). */
const instantArb = (start: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: -4, max: 6 * 24 * 4 }).map((quarters) => start + quarters * 15 * MINUTE) },
    { weight: 1, arbitrary: fc.integer({ min: -60, max: 6 * 24 * 60 }).map((minutes) => start + minutes * MINUTE + 1000) },
  );

const queryArb = (start: number) =>
  fc.record({
    windows: fc.record({
      a: instantArb(start),
      b: instantArb(start),
      size: fc.constantFrom<WindowSize>('hour', 'day', 'month'),
      zone: fc.constantFrom(...ZONES),
      dimensions: fc.shuffledSubarray(KEYS),
      byCustomer: fc.boolean(),
      narrow: fc.option(fc.record({ key: fc.constantFrom(...KEYS), values: fc.subarray(['a', 'b', '5', '7.5', 'p', 'q', LONG], { minLength: 1 }) }), { nil: undefined }),
      split: fc.constantFrom('all', 'customer', 'entity'),
      limit: fc.integer({ min: 1, max: 50 }),
      page: fc.integer({ min: 0, max: 2 }),
    }),
    usage: fc.record({
      members: fc.array(fc.record({ key: fc.constantFrom('m1', 'm2'), entity: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }), from: fc.option(instantArb(start), { nil: null }), to: fc.option(instantArb(start), { nil: null }) }), {
        minLength: 1,
        maxLength: 4,
      }),
      byPeriod: fc.option(fc.constantFrom<'day' | 'month'>('day', 'month'), { nil: undefined }),
      zone: fc.constantFrom(...ZONES),
      dimensions: fc.shuffledSubarray(KEYS),
    }),
  });

const editArb = fc.record({
  pick: fc.nat(),
  kind: fc.constantFrom('value', 'timestamp', 'metadata', 'delete'),
  cents: fc.integer({ min: 0, max: 5000 }),
  minutes: fc.integer({ min: -300, max: 300 }),
  metadata: metadataArb,
});

const scenarioArb = fc.integer({ min: 0, max: STARTS.length - 1 }).chain((startIndex) =>
  fc.record({
    start: fc.constant(STARTS[startIndex]!),
    meters: fc.array(meterArb, { minLength: 1, maxLength: 2 }),
    events: fc.array(eventArb, { minLength: 8, maxLength: 40 }),
    batchSize: fc.integer({ min: 5, max: 40 }),
    queries: fc.array(queryArb(STARTS[startIndex]!), { minLength: 3, maxLength: 5 }),
    edits: fc.array(editArb, { maxLength: 5 }),
    later: meterArb,
    /** Totals rows to hand back to pending before the first queries, as if their merge had not run yet. */
    unmerged: fc.integer({ min: 0, max: 3 }),
  }),
);

type World = ModelWorld;
const createWorld = () => createModelWorld(api, tenant, 'rollup');

async function createMeter(world: World, meter: { aggregation: string; groupBy: string[]; filters: Filter[] }): Promise<string> {
  const res = await api
    .http()
    .post('/meters')
    .set(bearer(tenant.adminToken))
    .send({ name: `${world.metric}-${randomUUID().slice(0, 6)}`, metric: world.metric, aggregation: meter.aggregation, ...(meter.aggregation === 'unique_count' ? { uniqueField: 'k1' } : {}), groupBy: meter.groupBy, filters: meter.filters });
  expect([res.status, res.body.errors]).toEqual([201, undefined]);
  return res.body.data.id as string;
}

const meterRow = async (id: string): Promise<MeterRow> => (await api.db<MeterRow>('meters').where({ id }).first())!;
/** The oracle's spec: the meter's, without its rollups, so that raw events are read. */
const rawSpec = (spec: AggregationSpec): AggregationSpec => ({ aggregation: spec.aggregation, uniqueField: spec.uniqueField, filters: spec.filters });

type Query = ReturnType<typeof queryArb> extends fc.Arbitrary<infer Q> ? Q : never;

/** Every query of the scenario, from the meter's rollups and from raw events: the same answers. Counts the queries the rollups answered. */
async function sameAnswers(world: World, meterId: string, queries: Query[]): Promise<number> {
  const meter = await meterRow(meterId);
  const spec = specOf(meter);
  expect(spec.rollups?.complete).toBe(true);
  let fromRollups = 0;
  for (const query of queries) {
    const w = query.windows;
    const [from, to] = w.a <= w.b ? [w.a, w.b + 15 * MINUTE] : [w.b, w.a];
    const entityIds = w.split === 'all' ? [null] : w.split === 'customer' ? world.entities.slice(0, 2) : [world.entities[1]!];
    const members: UsageMember[] = entityIds.map((customerEntityId) => ({ key: 'query', customerEntityId, from: new Date(from), to: new Date(to) }));
    const dimensions = w.dimensions.filter((key) => meter.group_by.includes(key));
    const narrowing = w.narrow && meter.group_by.includes(w.narrow.key) ? { [w.narrow.key]: w.narrow.values } : {};
    const windowQuery = { organisationId: tenant.organisationId, metric: meter.metric, members, windowSize: w.size, timeZone: w.zone, dimensions, byCustomer: w.byCustomer, narrowing, limit: w.limit, offset: w.page * w.limit };
    if (readsRollups(spec, members, [...dimensions, ...Object.keys(narrowing)], w.zone)) fromRollups += 1;
    expect(await aggregateUsageWindows(api.db, { ...windowQuery, spec })).toEqual(await aggregateUsageWindows(api.db, { ...windowQuery, spec: rawSpec(spec) }));
    // The same over the whole organisation by at most its first dimension, narrowed by that one alone: what the totals answer.
    const wholeNarrowing = dimensions[0] !== undefined && narrowing[dimensions[0]] ? { [dimensions[0]]: narrowing[dimensions[0]]! } : {};
    const whole = { ...windowQuery, members: [{ key: 'query', customerEntityId: null, from: new Date(from), to: new Date(to) }], dimensions: dimensions.slice(0, 1), byCustomer: false, narrowing: wholeNarrowing };
    if (readsRollups(spec, whole.members, [...whole.dimensions, ...Object.keys(wholeNarrowing)], w.zone)) totalAnswers += 1;
    expect(await aggregateUsageWindows(api.db, { ...whole, spec })).toEqual(await aggregateUsageWindows(api.db, { ...whole, spec: rawSpec(spec) }));

    const u = query.usage;
    const usageMembers: UsageMember[] = u.members.map((member) => {
      const ends = [member.from, member.to].filter((end): end is number => end !== null).sort((a, b) => a - b);
      const [start, end] = member.from !== null && member.to !== null ? ends : [member.from, member.to];
      return { key: member.key, customerEntityId: member.entity === null ? null : world.entities[member.entity]!, from: start === null || start === undefined ? null : new Date(start), to: end === null || end === undefined ? null : new Date(end) };
    });
    const usageDimensions = u.dimensions.filter((key) => meter.group_by.includes(key));
    const usageQuery = { organisationId: tenant.organisationId, metric: meter.metric, members: usageMembers, dimensions: usageDimensions, ...(u.byPeriod ? { byPeriod: u.byPeriod, timeZone: u.zone } : {}) };
    if (readsRollups(spec, usageMembers, usageDimensions, u.byPeriod ? u.zone : null)) fromRollups += 1;
    expect(await aggregateUsage(api.db, { ...usageQuery, spec })).toEqual(await aggregateUsage(api.db, { ...usageQuery, spec: rawSpec(spec) }));
  }
  return fromRollups;
}

/** The rollup table, row for row, as the raw events fold for the meter: what ingestion, edits and backfill keep. */
async function rollupsMatchEvents(meterId: string): Promise<void> {
  const { stored, expected } = await rollupsAgainstEvents(api.db, meterId);
  expect(stored).toEqual(expected);
}

/**
 * The stored chunks of the metric (by batch and time) recorded as pending for the meter's totals, every
 * `modulo`-th by a hash of its batch and time (all for 1), with the quarter hours their events fall in.
 */
async function markPending(db: Knex, meterId: string, metric: string, modulo: number): Promise<void> {
  await db.raw(
    `INSERT INTO meter_totals_pending (meter_id, organisation_id, batch_id, created_at, first_bucket, last_bucket)
     SELECT ?, organisation_id, batch_id, created_at, min(date_bin('15 minutes', "timestamp", timestamptz '2000-01-01Z')), max(date_bin('15 minutes', "timestamp", timestamptz '2000-01-01Z'))
     FROM usage_events WHERE organisation_id = ? AND metric = ? AND batch_id IS NOT NULL
     GROUP BY organisation_id, batch_id, created_at
     HAVING abs(hashtext(batch_id || created_at::text)) % ? = 0
     ON CONFLICT DO NOTHING`,
    [meterId, tenant.organisationId, metric, modulo],
  );
}

/** The meter's chunks still pending once none is, or `ms` have passed. */
async function pendingAfter(meterId: string, ms: number): Promise<number> {
  const pending = async () => Number((await api.db('meter_totals_pending').where({ meter_id: meterId }).count<Array<{ count: string }>>({ count: '*' }))[0]!.count);
  const deadline = Date.now() + ms;
  while ((await pending()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
  return pending();
}

/**
 * Some of the stored chunks made pending again for the meter's totals (every `modulo`-th by a hash of its batch
 * and time; none for 0): the totals replaced by the fold of every other chunk's events, and each chosen chunk
 * recorded as pending, as between a chunk's commit and the fold that takes it. Reads must then take the
 * periods those chunks touch from the rollups, and the oracle's fold must add them back exactly.
 */
async function unfold(meterId: string, modulo: number): Promise<void> {
  if (modulo === 0) return;
  const meter = await api.db<MeterRow>('meters').where({ id: meterId }).first();
  if (!meter) throw new Error(`meter ${meterId} not found`);
  await api.db.transaction(async (trx) => {
    // As a rebuild does: no chunk and no fold of the worker's runs meanwhile. Chunks truly pending stay so.
    await lockRollups(trx, meter.organisation_id, 'exclusive');
    await markPending(trx, meterId, meter.metric, modulo);
    await trx('meter_rollup_totals').where({ meter_id: meterId }).delete();
    const others = trx.raw(
      `(SELECT e.organisation_id, e.customer_entity_id, e.metric, e.value, e."timestamp", e.metadata, e.created_at, e.id FROM usage_events e
        WHERE e.organisation_id = ? AND e.metric = ?
          AND NOT EXISTS (SELECT 1 FROM meter_totals_pending m WHERE m.meter_id = ? AND m.batch_id = e.batch_id AND m.created_at = e.created_at)) AS usage_events`,
      [meter.organisation_id, meter.metric, meterId],
    );
    await addEventsToTotals(trx, { id: meterId, metric: meter.metric, aggregation: meter.aggregation, groupBy: meter.group_by, filters: meter.filters }, others);
  });
}

let rollupAnswers = 0;
let totalAnswers = 0;

describe('meter rollups, against raw events', () => {
  it('when events, meters, queries, edits and deletions are random, then the rollups answer every query as the raw events do', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const world = await createWorld();
        const meterIds: string[] = [];
        for (const meter of s.meters) meterIds.push(await createMeter(world, meter));
        const events = s.events.map((event) => ({
          CustomerEntityId: world.entities[event.entity]!,
          metric: world.metric,
          value: decimal(event.cents),
          timestamp: new Date(s.start + event.minute * MINUTE).toISOString(),
          metadata: event.metadata,
        }));
        // In several batches, so that later ones add to the buckets earlier ones wrote.
        for (let first = 0; first < events.length; first += s.batchSize) {
          const part = events.slice(first, first + s.batchSize);
          const ingested = await api.http().post('/events/batch').set(system()).send({ events: part });
          expect([ingested.status, ingested.body.data?.summary?.success]).toEqual([200, part.length]);
        }
        for (const meterId of meterIds) {
          await unfold(meterId, s.unmerged);
          rollupAnswers += await sameAnswers(world, meterId, s.queries);
          await rollupsMatchEvents(meterId);
        }

        // Edits and deletions rebuild the buckets they touch.
        const stored = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric: world.metric }).orderBy('id').select('id', 'timestamp');
        for (const edit of s.edits) {
          const target = stored[edit.pick % stored.length];
          if (!target) break;
          if (edit.kind === 'delete') {
            await api.http().delete(`/usage/${target.id}`).set(system());
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
        for (const meterId of meterIds) {
          rollupAnswers += await sameAnswers(world, meterId, s.queries);
          await rollupsMatchEvents(meterId);
        }

        // A meter defined after its events fills from them, then answers as they do.
        const laterId = await createMeter(world, s.later);
        const deadline = Date.now() + 30_000;
        let shown = (await api.http().get(`/meters/${laterId}`).set(system())).body.data;
        while (shown.backfill.status !== 'completed' && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          shown = (await api.http().get(`/meters/${laterId}`).set(system())).body.data;
        }
        expect(shown.backfill).toEqual({ status: 'completed', eventsRead: stored.length });
        rollupAnswers += await sameAnswers(world, laterId, s.queries);
        await rollupsMatchEvents(laterId);
      }),
      { numRuns: Number(process.env.METER_ROLLUPS_RUNS ?? 12), ...shrinkWithin(120_000), ...(process.env.METER_ROLLUPS_SEED ? { seed: Number(process.env.METER_ROLLUPS_SEED) } : {}) },
    );
    // The property is about the rollups: most queries must have been answered from them.
    expect(rollupAnswers).toBeGreaterThan(20);
    expect(totalAnswers).toBeGreaterThan(20);
  }, 120_000);

  it('when batches complete, then the worker folds their chunks into the totals within seconds, each chunk once, and the totals equal the events', async () => {
    const world = await createWorld();
    const meterId = await createMeter(world, { aggregation: 'sum', groupBy: ['k1'], filters: [] });
    const events = Array.from({ length: 30 }, (_, index) => ({
      CustomerEntityId: world.entities[index % world.entities.length]!,
      metric: world.metric,
      value: String(index + 1),
      timestamp: new Date(Date.parse('2026-03-10T10:00:00Z') + index * 7 * MINUTE).toISOString(),
      metadata: { k1: `v${index % 3}` },
    }));
    const folds = async () => sample(await (await fetch(process.env.TEST_WORKER_METRICS_URL!)).text(), 'billing_meter_totals_folds_total', { outcome: 'folded' }) ?? 0;
    const before = await folds();
    for (const part of [events.slice(0, 10), events.slice(10, 20), events.slice(20)]) {
      expect((await api.http().post('/events/batch').set(system()).send({ events: part })).status).toBe(200);
    }
    expect(await pendingAfter(meterId, 15_000)).toBe(0);
    // Folded by the worker alone: the day's total, as stored, is every event's value once.
    const [day] = await api.db('meter_rollup_totals').where({ meter_id: meterId, grain: 'day', dimension: -1 }).select('sum', 'count');
    expect([Number(day.sum), Number(day.count)]).toEqual([(30 * 31) / 2, 30]);
    // The worker counts its folds for operators.
    expect(await folds()).toBeGreaterThan(before);
    await rollupsMatchEvents(meterId);
  });

  it('when more chunks are pending than one fold takes, then the worker folds them all, a bounded statement at a time, and the totals equal the events', async () => {
    const world = await createWorld();
    const meterId = await createMeter(world, { aggregation: 'sum', groupBy: ['k1'], filters: [] });
    // A backlog, as a worker that was down leaves it: 250 chunks of two events each, stored and pending.
    const chunks = Array.from({ length: 250 }, (_, index) => ({ batchId: `ubt_backlog_${randomUUID()}`, createdAt: new Date(Date.parse('2026-03-20T00:00:00Z') + index * 1_000).toISOString() }));
    await api.db('usage_events').insert(
      chunks.flatMap((chunk, index) =>
        [0, 1].map((half) => ({
          id: `evt_backlog_${randomUUID()}`,
          organisation_id: tenant.organisationId,
          customer_entity_id: world.entities[(index + half) % world.entities.length]!,
          metric: world.metric,
          value: String(index + half),
          timestamp: new Date(Date.parse('2026-03-10T00:00:00Z') + (index * 2 + half) * 13 * MINUTE).toISOString(),
          metadata: { k1: `v${(index + half) % 4}` },
          batch_id: chunk.batchId,
          created_at: chunk.createdAt,
        })),
      ),
    );
    await markPending(api.db, meterId, world.metric, 1);
    // Any batch of the organisation asks the worker to fold.
    const ask = [{ CustomerEntityId: world.entities[0]!, metric: world.metric, value: '1', timestamp: '2026-03-10T00:05:00Z', metadata: { k1: 'v0' } }];
    expect((await api.http().post('/events/batch').set(system()).send({ events: ask })).status).toBe(200);
    expect(await pendingAfter(meterId, 20_000)).toBe(0);
    // The totals alone (the backlog's events are in no rollup, as they were written straight into the table).
    const { stored, expected } = await rollupsAgainstEvents(api.db, meterId);
    const totals = (rows: typeof stored) => rows.filter((row) => row.entity.startsWith('total:'));
    expect(totals(stored)).toEqual(totals(expected));
    expect(totals(stored).length).toBeGreaterThan(0);
  });

  it('when events of two entities share the latest instant, then latest takes the one of the largest id, from rollups as from raw events', async () => {
    const world = await createWorld();
    const meterId = await createMeter(world, { aggregation: 'latest', groupBy: [], filters: [] });
    const at = '2026-03-10T10:05:00.000Z';
    const events = world.entities.map((entity, index) => ({ CustomerEntityId: entity, metric: world.metric, value: String(index + 1), timestamp: at }));
    expect((await api.http().post('/events/batch').set(system()).send({ events })).status).toBe(200);
    const [latest] = await api.db('usage_events').where({ organisation_id: tenant.organisationId, metric: world.metric }).orderBy('id', 'desc').select('value');
    const spec = specOf(await meterRow(meterId));
    const members: UsageMember[] = [{ key: 'all', customerEntityId: null, from: new Date('2026-03-10T00:00:00Z'), to: new Date('2026-03-11T00:00:00Z') }];
    const query = { organisationId: tenant.organisationId, metric: world.metric, members };
    expect(readsRollups(spec, members, [], null)).not.toBeNull();
    const [fromRollups] = await aggregateUsage(api.db, { ...query, spec });
    const [fromEvents] = await aggregateUsage(api.db, { ...query, spec: rawSpec(spec) });
    expect(fromRollups?.value).toBe(fromEvents?.value);
    expect(Number(fromRollups?.value)).toBe(Number(latest.value));
  });

  it('when a clock goes back into the middle of a local hour (Chatham, 03:45 to 02:45), then each local hour holds both its runs of quarters and not the quarters between', async () => {
    const world = await createWorld();
    const meterId = await createMeter(world, { aggregation: 'sum', groupBy: ['k1'], filters: [] });
    // Chatham's 2026 autumn change: 03:45 at +13:45 is 14:00Z, and clocks read 02:45 at +12:45 again.
    const at = (instant: string, value: string, k1: string) => ({ CustomerEntityId: world.entities[0]!, metric: world.metric, value, timestamp: instant, metadata: { k1 } });
    const events = [at('2026-04-04T12:30:00Z', '1', 'a'), at('2026-04-04T13:30:00Z', '10', 'a'), at('2026-04-04T14:05:00Z', '100', 'b'), at('2026-04-04T14:30:00Z', '1000', 'a')];
    expect((await api.http().post('/events/batch').set(system()).send({ events })).status).toBe(200);
    const params = new URLSearchParams({ from: '2026-04-04T12:00:00Z', to: '2026-04-04T16:00:00Z', windowSize: 'hour', timezone: 'Pacific/Chatham', groupBy: 'k1' });
    const res = await api.http().get(`/meters/${meterId}/query?${params.toString()}`).set(system()).expect(200);
    const rows = res.body.data.rows.map((row: { windowStart: string; groups: { k1: string }; value: string }) => [row.windowStart, row.groups.k1, row.value]);
    // Local 02:00 is 12:15Z to 13:15Z and 14:00Z to 14:15Z: 12:30Z and 14:05Z, not 13:30Z between. Local 03:00 is
    // 13:15Z to 14:00Z and 14:15Z to 15:15Z: 13:30Z and 14:30Z.
    expect(rows).toEqual([
      [expect.any(String), 'a', '1'],
      [expect.any(String), 'b', '100'],
      [expect.any(String), 'a', '1010'],
    ]);
    const spec = specOf(await meterRow(meterId));
    const members: UsageMember[] = [{ key: 'query', customerEntityId: null, from: new Date('2026-04-04T12:00:00Z'), to: new Date('2026-04-04T16:00:00Z') }];
    const query = { organisationId: tenant.organisationId, metric: world.metric, members, windowSize: 'hour' as const, timeZone: 'Pacific/Chatham', dimensions: ['k1'], byCustomer: false, narrowing: {}, limit: 100, offset: 0 };
    expect(await aggregateUsageWindows(api.db, { ...query, spec })).toEqual(await aggregateUsageWindows(api.db, { ...query, spec: rawSpec(spec) }));
  });

  it('when a meter is created after its events and then redefined, then GET /meters/{id} shows each fill reach completed with every event read, and the rollups hold them', async () => {
    const world = await createWorld();
    const events = Array.from({ length: 60 }, (_, index) => ({
      CustomerEntityId: world.entities[index % 3]!,
      metric: world.metric,
      value: String(index),
      // Over five UTC days: five slices.
      timestamp: new Date(Date.parse('2026-03-01T22:00:00Z') + index * 2 * 60 * MINUTE).toISOString(),
      metadata: index % 4 === 0 ? {} : { k1: index % 2 === 0 ? 'a' : 'b', k2: { x: 'p' } },
    }));
    expect((await api.http().post('/events/batch').set(system()).send({ events })).status).toBe(200);
    const created = await api.http().post('/meters').set(bearer(tenant.adminToken)).send({ name: `${world.metric}-filled`, metric: world.metric, aggregation: 'sum', groupBy: ['k1'] });
    expect(created.status).toBe(201);
    expect(created.body.data.backfill.status).toBe('pending');
    const meterId = created.body.data.id as string;
    const completed = async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const shown = (await api.http().get(`/meters/${meterId}`).set(system())).body.data;
        if (shown.backfill.status === 'completed' || Date.now() > deadline) return shown;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    expect((await completed()).backfill).toEqual({ status: 'completed', eventsRead: 60 });
    await rollupsMatchEvents(meterId);
    const listed = await api.http().get(`/meters?search=${world.metric}`).set(system());
    expect(listed.body.data.items ?? listed.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ id: meterId, backfill: { status: 'completed', eventsRead: 60 } })]));

    // A new groupBy drops the rollups and fills them anew under the next generation.
    const redefined = await api.http().put(`/meters/${meterId}`).set(bearer(tenant.adminToken)).send({ groupBy: ['k2.x', 'k1'], filters: [{ key: 'k1', operator: 'exists' }] });
    expect([redefined.status, redefined.body.data.backfill]).toEqual([200, { status: 'pending', eventsRead: 0 }]);
    expect((await completed()).backfill).toEqual({ status: 'completed', eventsRead: 60 });
    expect((await meterRow(meterId)).backfill_generation).toBe(1);
    await rollupsMatchEvents(meterId);
    // A new name keeps the rollups as they are.
    const renamed = await api.http().put(`/meters/${meterId}`).set(bearer(tenant.adminToken)).send({ name: `${world.metric}-renamed`, aggregation: 'max' });
    expect(renamed.body.data.backfill).toEqual({ status: 'completed', eventsRead: 60 });
    await rollupsMatchEvents(meterId);
  });
});
