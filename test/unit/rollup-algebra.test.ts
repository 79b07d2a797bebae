import fc from 'fast-check';
import { BUCKET_MS, bucketOf } from '../../src/modules/usage/rollup-buckets';
import { piecesOf } from '../../src/modules/usage/rollup-pieces';

/**
 * The algebra the rollups rest on, in memory: events folded into quarter-hour buckets per entity and group,
 * buckets folded into UTC hours and days over every entity, and a window of a time zone read back from
 * whole days, hours and quarters (the cut `piecesOf` makes) equals the fold of the window's raw events,
 * for sum, count, max and latest, in any zone, split by a dimension or not. The SQL does the same folds; the
 * integration model test checks the SQL against raw events in Postgres.
 */

const runs = { numRuns: Number(process.env.ROLLUP_ALGEBRA_RUNS ?? 300), ...(process.env.ROLLUP_ALGEBRA_SEED ? { seed: Number(process.env.ROLLUP_ALGEBRA_SEED) } : {}) };
const MINUTE = 60_000;
const START = Date.UTC(2026, 2, 26);
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/St_Johns', 'Pacific/Chatham'];

interface Event {
  at: number;
  /** Order of storage: what breaks ties of `at` for latest (created_at, then id, in the SQL). */
  seq: number;
  entity: number;
  value: number;
  model: string | null;
}

/** A fold: what a bucket, an hour, a day or a window keeps. */
interface Fold {
  sum: number;
  count: number;
  max: number;
  latest: { at: number; seq: number; value: number };
}

const later = (a: Fold['latest'], b: Fold['latest']) => (a.at !== b.at ? a.at > b.at : a.seq > b.seq);
const merge = (a: Fold | undefined, b: Fold): Fold =>
  a === undefined ? b : { sum: a.sum + b.sum, count: a.count + b.count, max: Math.max(a.max, b.max), latest: later(b.latest, a.latest) ? b.latest : a.latest };
const foldOf = (event: Event): Fold => ({ sum: event.value, count: 1, max: event.value, latest: { at: event.at, seq: event.seq, value: event.value } });

function add<K>(map: Map<K, Fold>, key: K, fold: Fold): void {
  map.set(key, merge(map.get(key), fold));
}

/** The local period of an instant in a zone, as `date_trunc` names it: its local year-month[-day[-hour]]. */
const formats = new Map(ZONES.map((zone) => [zone, new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', hourCycle: 'h23' })]));
function localPeriod(at: number, zone: string, size: 'hour' | 'day' | 'month'): string {
  const parts = Object.fromEntries(formats.get(zone)!.formatToParts(new Date(at)).map((part) => [part.type, part.value]));
  return size === 'month' ? `${parts.year}-${parts.month}` : size === 'day' ? `${parts.year}-${parts.month}-${parts.day}` : `${parts.year}-${parts.month}-${parts.day}T${parts.hour}`;
}

const eventArb = fc.record({
  minute: fc.integer({ min: 0, max: 40 * 24 * 60 }),
  second: fc.integer({ min: 0, max: 59 }),
  entity: fc.integer({ min: 0, max: 3 }),
  value: fc.integer({ min: -50, max: 1000 }),
  model: fc.constantFrom('a', 'b', 'c', null),
});

describe('rollup algebra', () => {
  it('when events are folded into buckets, hours and days, then every window of every zone reads back from whole pieces what its raw events fold to', () => {
    fc.assert(
      fc.property(
        fc.array(eventArb, { minLength: 1, maxLength: 120 }),
        fc.constantFrom(...ZONES),
        fc.constantFrom<'hour' | 'day' | 'month'>('hour', 'day', 'month'),
        fc.boolean(),
        fc.integer({ min: 0, max: 40 * 24 * 4 }),
        fc.integer({ min: 1, max: 40 * 24 * 4 }),
        (raw, zone, size, byModel, fromQuarter, quarters) => {
          const events: Event[] = raw.map((event, seq) => ({ at: START + event.minute * MINUTE + event.second * 1000, seq, entity: event.entity, value: event.value, model: event.model }));
          const group = (event: { model: string | null }) => (byModel ? event.model : '*');
          const from = START + fromQuarter * BUCKET_MS;
          const to = from + quarters * BUCKET_MS;

          // Raw: each event in the window its local period names, per group.
          const expected = new Map<string, Fold>();
          for (const event of events) if (event.at >= from && event.at < to) add(expected, JSON.stringify([localPeriod(event.at, zone, size), group(event)]), foldOf(event));

          // Rollups: per entity, bucket and model; totals: per UTC hour and day, over every entity.
          const rollups = new Map<string, Fold>();
          for (const event of events) add(rollups, JSON.stringify([event.entity, bucketOf(new Date(event.at)).getTime(), event.model]), foldOf(event));
          const totals = new Map<string, Fold>();
          for (const [key, fold] of rollups) {
            const [, bucket, model] = JSON.parse(key) as [number, number, string | null];
            for (const [grain, width] of [['hour', 3_600_000], ['day', 86_400_000]] as const) add(totals, JSON.stringify([grain, Math.floor(bucket / width) * width, group({ model })]), fold);
          }

          // Windows: the quarters whose local period is the same, in runs (two where a clock goes back into
          // the middle of a local hour); each run read back from its pieces.
          const runs: Array<{ period: string; from: number; to: number }> = [];
          for (let quarter = from; quarter < to; quarter += BUCKET_MS) {
            const period = localPeriod(quarter, zone, size);
            const last = runs.at(-1);
            if (last && last.period === period) last.to = quarter + BUCKET_MS;
            else runs.push({ period, from: quarter, to: quarter + BUCKET_MS });
          }
          const actual = new Map<string, Fold>();
          for (const { period, from: runFrom, to: runTo } of runs) {
            for (const piece of piecesOf(runFrom, runTo)) {
              expect(piece.grain).not.toBe('raw');
              if (piece.grain === 'quarter') {
                for (const [key, fold] of rollups) {
                  const [, bucket, model] = JSON.parse(key) as [number, number, string | null];
                  if (bucket >= piece.from && bucket < piece.to) add(actual, JSON.stringify([period, group({ model })]), fold);
                }
              } else {
                const width = piece.grain === 'hour' ? 3_600_000 : 86_400_000;
                for (let at = piece.from; at < piece.to; at += width) {
                  for (const [key, fold] of totals) {
                    const [grain, start, value] = JSON.parse(key) as [string, number, string | null];
                    if (grain === piece.grain && start === at) add(actual, JSON.stringify([period, value]), fold);
                  }
                }
              }
            }
          }
          expect(new Map([...actual].sort())).toEqual(new Map([...expected].sort()));
        },
      ),
      runs,
    );
  });
});
