import type { Knex } from 'knex';
import type { Aggregation } from './usage.repository';
import { piecesOf } from './rollup-pieces';

/**
 * Organisation-wide totals of a meter: per UTC hour and per UTC day, the fold of all its customer entities'
 * rollups, once with no dimension (the meter's total) and once per groupBy key (per value of that key).
 * A query over the whole organisation by at most one dimension reads whole days and hours from here and
 * only the quarter hours at its windows' ends from the rollups, so a month reads about 31 rows per value
 * instead of one per entity, quarter hour and group. A chunk's statement appends what it adds to
 * `meter_rollup_pending` (rows no other chunk writes, so chunks never wait on one another for them); a merge
 * after each batch folds pending rows into the totals; reads add what is still pending; every rebuild of
 * rollups rebuilds the totals of the UTC days it touched and drops their pending rows.
 */

/** The grains totals are kept at, each a UTC period. */
export const TOTAL_GRAINS = ['hour', 'day'] as const;

/** `dimension` of the meter's total, over every group. */
export const NO_DIMENSION = -1;

const COLUMNS = 'meter_id, organisation_id, grain, dimension, bucket_start, group_value, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id';
const KEY = '(meter_id, grain, dimension, bucket_start, group_value)';
const DAY_MS = 86_400_000;

/** The dimensions a meter's totals are kept by: none, then each groupBy key by its position. */
const dimensionsOf = (groupBy: readonly string[]): number[] => [NO_DIMENSION, ...groupBy.map((_, index) => index)];

/**
 * The rows of a fold, one per (grain, dimension, period, value), in key order. `rows` has the columns
 * organisation_id, the instant the row counts at, group_values, and the fold's parts; `parts` says how the
 * parts are read.
 */
function expanded(db: Knex, meterId: string, groupBy: readonly string[], rows: Knex.QueryBuilder, at: string, parts: string): Knex.Raw {
  return db.raw(
    `SELECT ?::text, r.organisation_id, g.grain, d.dimension, date_trunc(g.grain, r.${at} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS total_bucket,
       CASE WHEN d.dimension < 0 THEN '{}'::text[] ELSE ARRAY[r.group_values[d.dimension + 1]] END AS total_value,
       ${parts}
     FROM (?) AS r
     CROSS JOIN unnest(?::text[]) AS g(grain)
     CROSS JOIN unnest(?::int[]) AS d(dimension)
     GROUP BY r.organisation_id, g.grain, d.dimension, total_bucket, total_value
     ORDER BY g.grain, d.dimension, total_bucket, total_value`,
    [meterId, rows, [...TOTAL_GRAINS], dimensionsOf(groupBy)],
  );
}

/** The parts of a fold of events: their sum, count, maximum and latest by ("timestamp", created_at, id). */
const EVENT_PARTS = ['sum(r.value)', 'count(*)', 'max(r.value)', ...['value', '"timestamp"', 'created_at', 'id'].map((column) => `(array_agg(r.${column} ORDER BY r."timestamp" DESC, r.created_at DESC, r.id DESC))[1]`)].join(', ');

/** The parts of a fold of rollups (or of totals, pending or not): the same, their own folded. */
const ROLLUP_PARTS = [
  'sum(r.sum)',
  'sum(r.count)',
  'max(r.max)',
  ...['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'].map((column) => `(array_agg(r.${column} ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1]`),
].join(', ');
const PENDING_PARTS = ROLLUP_PARTS;

const incomingIsLater = '(excluded.latest_timestamp, excluded.latest_created_at, excluded.latest_id) > (meter_rollup_totals.latest_timestamp, meter_rollup_totals.latest_created_at, meter_rollup_totals.latest_id)';

/**
 * The statement that appends `events` (a meter's events as `meterEvents` selects them: each with its group
 * values), folded per total row, to the pending rows: a plain insert, which locks nothing another chunk needs.
 */
export function totalsAddition(db: Knex, meter: { id: string; groupBy: readonly string[] }, events: Knex.QueryBuilder): { sql: string; bindings: readonly Knex.Value[] } {
  const { sql, bindings } = expanded(db, meter.id, meter.groupBy, events, '"timestamp"', EVENT_PARTS).toSQL();
  return { sql: `INSERT INTO meter_rollup_pending (${COLUMNS}) ${sql}`, bindings };
}

/**
 * Folds the organisation's pending rows into its totals: taken out and merged in one statement, rows in key
 * order so that concurrent merges lock totals in one order. The caller holds the organisation's rollup lock
 * in shared form, so no rebuild (which replaces totals and drops pending rows under the exclusive form) runs
 * meanwhile. Answers the number of pending rows merged.
 */
export async function mergePendingTotals(trx: Knex, organisationId: string): Promise<number> {
  const result = await trx.raw<{ rowCount: number }>(
    `WITH moved AS (DELETE FROM meter_rollup_pending WHERE organisation_id = ? RETURNING ${COLUMNS})
     INSERT INTO meter_rollup_totals (${COLUMNS})
     SELECT meter_id, organisation_id, grain, dimension, bucket_start, group_value, ${PENDING_PARTS}
     FROM moved AS r
     GROUP BY meter_id, organisation_id, grain, dimension, bucket_start, group_value
     ORDER BY meter_id, grain, dimension, bucket_start, group_value
     ON CONFLICT ${KEY} DO UPDATE SET
       sum = meter_rollup_totals.sum + excluded.sum,
       count = meter_rollup_totals.count + excluded.count,
       max = greatest(meter_rollup_totals.max, excluded.max),
       ${['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'].map((column) => `${column} = CASE WHEN ${incomingIsLater} THEN excluded.${column} ELSE meter_rollup_totals.${column} END`).join(',\n       ')}`,
    [organisationId],
  );
  return result.rowCount ?? 0;
}

/** The UTC days [from, to) touches, each by its first instant. */
export function utcDaysOf(from: Date, to: Date): Date[] {
  const days: Date[] = [];
  for (let day = Math.floor(from.getTime() / DAY_MS) * DAY_MS; day < to.getTime(); day += DAY_MS) days.push(new Date(day));
  return days;
}

/**
 * Under the exclusive rollup lock, after the meter's rollups were rebuilt: the totals of each UTC day given
 * (its day row and its hours) replaced by the fold of the day's rollups of every entity, and the day's
 * pending rows dropped (the rollups hold what they added).
 */
export async function rebuildTotals(trx: Knex, meter: { id: string; groupBy: readonly string[] }, days: readonly Date[]): Promise<void> {
  for (const day of days) {
    const end = new Date(day.getTime() + DAY_MS);
    await trx('meter_rollup_pending').where('meter_id', meter.id).where('bucket_start', '>=', day).where('bucket_start', '<', end).delete();
    await trx('meter_rollup_totals').where('meter_id', meter.id).where('bucket_start', '>=', day).where('bucket_start', '<', end).delete();
    const rollups = trx('meter_rollups').where('meter_id', meter.id).where('bucket_start', '>=', day).where('bucket_start', '<', end).select('*');
    const { sql, bindings } = expanded(trx, meter.id, meter.groupBy, rollups, 'bucket_start', ROLLUP_PARTS).toSQL();
    await trx.raw(`INSERT INTO meter_rollup_totals (${COLUMNS}) ${sql}`, bindings);
  }
}

/** A fold over rows with the rollups' parts, as the aggregation reads it. */
function foldOfParts(aggregation: Exclude<Aggregation, 'unique_count'>): string {
  switch (aggregation) {
    case 'sum':
      return 'coalesce(sum(p.sum), 0)::text';
    case 'count':
      return 'sum(p.count)::text';
    case 'max':
      return 'max(p.max)::text';
    case 'latest':
      return '(array_agg(p.latest_value ORDER BY p.latest_timestamp DESC, p.latest_created_at DESC, p.latest_id DESC))[1]::text';
  }
}

/** What an organisation-wide read of totals needs. */
export interface TotalsQuery {
  meterId: string;
  aggregation: Exclude<Aggregation, 'unique_count'>;
  /** The position of the dimension in the meter's groupBy, or NO_DIMENSION. */
  dimension: number;
  /** Values the dimension must take, when narrowed. */
  narrowing: readonly string[] | null;
  /**
   * The runs of quarter hours each window holds, [from, to) instants within the query's span, `window` its
   * index in the answer's order. A window is one run, but for a local hour or day a clock change goes back
   * into (Lord Howe's and Chatham's hours): then it is two, with another window's quarters between.
   */
  segments: ReadonlyArray<{ window: number; from: Date; to: Date }>;
  limit: number;
  offset: number;
}

/**
 * Rows per window and value of the dimension (nulls last), a page of them with the count of all: whole UTC
 * days and hours from the totals and what is pending for them, the quarter hours between from the rollups
 * of every entity. Answers null
 * when a window does not start and end on a quarter hour (raw events are read then).
 */
export async function readTotals(db: Knex, query: TotalsQuery): Promise<{ rows: Array<{ window: number; value: string | null; group: string | null }>; total: number } | null> {
  const pieces = query.segments.flatMap((segment) => piecesOf(segment.from.getTime(), segment.to.getTime()).map((piece) => ({ ...piece, window: segment.window })));
  if (pieces.some((piece) => piece.grain === 'raw')) return null;
  if (pieces.length === 0) return { rows: [], total: 0 };
  const list = (grain: 'totals' | 'quarter') => pieces.filter((piece) => (grain === 'quarter') === (piece.grain === 'quarter'));
  const unnest = (chosen: typeof pieces) => [chosen.map((piece) => piece.window), chosen.map((piece) => piece.grain), chosen.map((piece) => new Date(piece.from).toISOString()), chosen.map((piece) => new Date(piece.to).toISOString())];
  const narrowed = (column: string) => (query.narrowing ? `AND ${column} = any(?::text[])` : '');
  const narrowing = query.narrowing ? [[...query.narrowing]] : [];
  const group = (column: string) => (query.dimension < 0 ? 'NULL::text' : column);
  const parts = 'sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id';
  const result = await db.raw<{ rows: Array<{ win: number; group_value: string | null; value: string | null; total: string }> }>(
    `WITH parts AS (
       SELECT piece.win AS win, ${group('t.group_value[1]')} AS group_value, ${parts.split(', ').map((column) => `t.${column}`).join(', ')}
       FROM unnest(?::int[], ?::text[], ?::timestamptz[], ?::timestamptz[]) AS piece(win, grain, piece_from, piece_to)
       JOIN (SELECT meter_id, grain, dimension, bucket_start, group_value, ${parts} FROM meter_rollup_totals
             UNION ALL SELECT meter_id, grain, dimension, bucket_start, group_value, ${parts} FROM meter_rollup_pending) t
         ON t.meter_id = ? AND t.grain = piece.grain AND t.dimension = ? AND t.bucket_start >= piece.piece_from AND t.bucket_start < piece.piece_to
       ${narrowed('t.group_value[1]')}
       UNION ALL
       SELECT piece.win AS win, ${group('r.group_values[?::int]')} AS group_value, ${parts.split(', ').map((column) => `r.${column}`).join(', ')}
       FROM unnest(?::int[], ?::text[], ?::timestamptz[], ?::timestamptz[]) AS piece(win, grain, piece_from, piece_to)
       JOIN meter_rollups r ON r.meter_id = ? AND r.bucket_start >= piece.piece_from AND r.bucket_start < piece.piece_to
       ${narrowed('r.group_values[?::int]')}
     )
     SELECT p.win, p.group_value, ${foldOfParts(query.aggregation)} AS value, count(*) OVER () AS total
     FROM parts p
     GROUP BY p.win, p.group_value
     ORDER BY p.win, p.group_value ASC NULLS LAST
     LIMIT ? OFFSET ?`,
    [
      ...unnest(list('totals')),
      query.meterId,
      query.dimension,
      ...narrowing,
      ...(query.dimension < 0 ? [] : [query.dimension + 1]),
      ...unnest(list('quarter')),
      query.meterId,
      ...(query.narrowing ? [query.dimension + 1, ...narrowing] : []),
      query.limit,
      query.offset,
    ] as Knex.Value[],
  );
  const rows = result.rows.map((row) => ({ window: Number(row.win), group: row.group_value, value: row.value }));
  if (rows.length > 0 || query.offset === 0) return { rows, total: rows.length > 0 ? Number(result.rows[0]!.total) : 0 };
  // The page asked lies past the last: the count alone.
  const count = await readTotals(db, { ...query, offset: 0, limit: 1 });
  return { rows: [], total: count?.total ?? 0 };
}
