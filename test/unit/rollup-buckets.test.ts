import fc from 'fast-check';
import { BUCKET_MS, bucketOf, onBucketEdge, utcDayOf } from '../../src/modules/usage/rollup-buckets';
import { touchedBuckets } from '../../src/modules/usage/meter-rollups';
import { readsRollups, type AggregationSpec } from '../../src/modules/usage/usage-aggregates';

const runs = { numRuns: Number(process.env.ROLLUP_BUCKETS_RUNS ?? 500), ...(process.env.ROLLUP_BUCKETS_SEED ? { seed: Number(process.env.ROLLUP_BUCKETS_SEED) } : {}) };
/** Instants from 1900 to 2200, in milliseconds. */
const instant = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2200, 0, 1) }).map((ms) => new Date(ms));

/** The local wall-clock minute of an instant in a zone, as minutes since the local epoch. */
function localMinutes(at: Date, timeZone: string): number {
  const parts = new Map(
    new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(at).map((part) => [part.type, Number(part.value)]),
  );
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.get(type) ?? 0;
  return Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute')) / 60_000;
}

describe('rollup buckets', () => {
  it('when an instant is bucketed, then its bucket is the quarter hour holding it, on an edge', () => {
    fc.assert(
      fc.property(instant, (at) => {
        const bucket = bucketOf(at);
        expect(bucket.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(at.getTime() - bucket.getTime()).toBeLessThan(BUCKET_MS);
        expect(onBucketEdge(bucket)).toBe(true);
        expect(onBucketEdge(at)).toBe(bucket.getTime() === at.getTime());
        expect(bucket.getUTCMinutes() % 15).toBe(0);
        expect([bucket.getUTCSeconds(), bucket.getUTCMilliseconds()]).toEqual([0, 0]);
      }),
      runs,
    );
  });

  it('when an instant is in a UTC day, then the day holds it and lasts 24 hours from midnight', () => {
    fc.assert(
      fc.property(instant, (at) => {
        const day = utcDayOf(at);
        expect(day.from.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(day.to.getTime()).toBeGreaterThan(at.getTime());
        expect(day.to.getTime() - day.from.getTime()).toBe(86_400_000);
        expect(day.from.toISOString().slice(10)).toBe('T00:00:00.000Z');
      }),
      runs,
    );
  });

  it.each(['Asia/Kathmandu', 'America/New_York', 'Europe/Berlin', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Asia/Kolkata'])(
    'when a bucket of %s since 1973 is read, then its local hour (so day and month) is the same at every instant in it',
    (timeZone) => {
      fc.assert(
        fc.property(fc.integer({ min: Date.UTC(1973, 0, 1), max: Date.UTC(2100, 0, 1) }), (ms) => {
          const start = bucketOf(new Date(ms));
          const last = new Date(start.getTime() + BUCKET_MS - 60_000);
          // The last minute of a bucket is in the local hour of its first: no hour starts inside a bucket.
          expect(Math.floor(localMinutes(last, timeZone) / 60)).toBe(Math.floor(localMinutes(start, timeZone) / 60));
        }),
        runs,
      );
    },
  );

  describe('which queries the rollups answer', () => {
    const spec = (aggregation: AggregationSpec['aggregation'], complete = true): AggregationSpec => ({ aggregation, uniqueField: null, filters: [], rollups: { meterId: 'mtr_1', groupBy: ['a', 'b'], complete } });
    const member = (from: string | null, to: string | null) => ({ key: 'k', customerEntityId: null, from: from === null ? null : new Date(from), to: to === null ? null : new Date(to) });

    it('when the windows are on bucket edges and the keys are the meter\'s, then the rollups answer', () => {
      expect(readsRollups(spec('sum'), [member('2026-01-01T00:15:00Z', '2026-02-01T00:00:00Z')], ['b'], null)).toEqual({ rollups: spec('sum').rollups, zoneNeedsCheck: false });
      expect(readsRollups(spec('latest'), [member(null, null)], [], null)?.zoneNeedsCheck).toBe(false);
    });

    it('when anything would make the rollups inexact, then raw events answer', () => {
      expect(readsRollups(spec('sum', false), [member(null, null)], [], null)).toBeNull();
      expect(readsRollups(spec('unique_count'), [member(null, null)], [], null)).toBeNull();
      expect(readsRollups(spec('sum'), [member('2026-01-01T00:10:00Z', null)], [], null)).toBeNull();
      expect(readsRollups(spec('sum'), [member(null, '2026-01-01T00:15:00.001Z')], [], null)).toBeNull();
      expect(readsRollups(spec('sum'), [member(null, null)], ['c'], null)).toBeNull();
      expect(readsRollups({ aggregation: 'sum', uniqueField: null, filters: [] }, [member(null, null)], [], null)).toBeNull();
    });

    it('when a zone reads periods from an open or old start, then the data is checked for buckets before 1973', () => {
      expect(readsRollups(spec('sum'), [member(null, null)], [], 'Asia/Kathmandu')?.zoneNeedsCheck).toBe(true);
      expect(readsRollups(spec('sum'), [member('1960-01-01T00:00:00Z', null)], [], 'Europe/Berlin')?.zoneNeedsCheck).toBe(true);
      expect(readsRollups(spec('sum'), [member('2026-01-01T00:00:00Z', null)], [], 'Europe/Berlin')?.zoneNeedsCheck).toBe(false);
      expect(readsRollups(spec('sum'), [member(null, null)], [], 'UTC')?.zoneNeedsCheck).toBe(false);
    });
  });

  describe('the buckets a change of events touches', () => {
    it('when events change, then each (metric, entity, bucket) they were or are in is rebuilt once, a whole bucket', () => {
      fc.assert(
        fc.property(fc.array(fc.record({ metric: fc.constantFrom('a', 'b'), customer_entity_id: fc.constantFrom('e1', 'e2'), timestamp: instant }), { maxLength: 20 }), (events) => {
          const touched = touchedBuckets(events);
          for (const event of events) {
            const ranges = touched.get(event.metric) ?? [];
            const holding = ranges.filter((range) => range.customerEntityId === event.customer_entity_id && range.from <= event.timestamp && event.timestamp < range.to);
            expect(holding).toHaveLength(1);
          }
          for (const ranges of touched.values()) {
            for (const range of ranges) {
              expect(range.to.getTime() - range.from.getTime()).toBe(BUCKET_MS);
              expect(onBucketEdge(range.from)).toBe(true);
            }
            expect(new Set(ranges.map((range) => `${range.customerEntityId}|${range.from.getTime()}`)).size).toBe(ranges.length);
          }
        }),
        runs,
      );
    });
  });
});
