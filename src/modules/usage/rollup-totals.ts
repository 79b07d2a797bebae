import type { Knex } from 'knex';
import type { Aggregation, InsertAlongside } from './usage.repository';
import { piecesOf } from './rollup-pieces';
import { sqlInstant } from '../../db/dates';

/**
 * Organisation-wide totals of a meter: per UTC hour and per UTC day, the fold of all its customer entities'
 * rollups, once with no dimension (the meter's total) and once per groupBy key (per value of that key).
 * A query over the whole organisation by at most one dimension reads whole days and hours from here and
 * only the quarter hours at its windows' ends from the rollups, so a month reads about 31 rows per value
 * instead of one per entity, quarter hour and group.
 *
 * Totals are kept behind ingestion, not in its path. A chunk's transaction writes one row per meter to
 * `meter_totals_pending`, naming the chunk (its batch and transaction time, which its events carry) and the
 * quarter hours its events span; a fold (`foldPendingTotals`, run by the worker at most about once a second
 * per organisation, and before any rebuild) reads those chunks' events and adds them to the totals in one
 * statement, so that busy seconds fold many chunks into few rows. A read takes every hour or day a pending
 * chunk touches from the rollups instead (exact, only slower), in the same statement, so it sees each chunk
 * either in the totals or in the rollups, never both and never neither. Every rebuild of rollups first folds
 * what is pending, then rebuilds the totals of the UTC days it touched.
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

/**
 * The totals rows of a fold of events (a meter's events as `meterEvents` selects them), in key order. Each
 * event is counted once per dimension, by UTC hour; days are folded from the hours. Sums, counts, maxima and
 * the latest instant are hash aggregates over a text key per dimension value ('' for the meter's total, '0'
 * for an event without the key, '1' and the value otherwise); the latest event of a row is then found among
 * the events at that instant (usually one). Ordered aggregates (`array_agg(… ORDER BY …)`) would sort every
 * row's events four times over, at several times the cost of the rest. Run with merge joins and
 * sequential scans off (the callers see to it).
 */
function totalsOfEvents(db: Knex, meterId: string, groupBy: readonly string[], events: Knex.QueryBuilder): Knex.Raw {
  const origin = "timestamptz '2000-01-01 00:00:00+00'";
  const day = (hour: string) => `date_bin('1 day', ${hour}, ${origin})`;
  return db.raw(
    `SELECT meter_id, organisation_id, grain, dimension, bucket_start,
       CASE WHEN dimension < 0 THEN '{}'::text[] WHEN value_key = '0' THEN ARRAY[NULL]::text[] ELSE ARRAY[substr(value_key, 2)] END AS group_value,
       sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id
     FROM (
       WITH x AS MATERIALIZED (
         SELECT d.dimension, date_bin('1 hour', e."timestamp", ${origin}) AS hour,
           CASE WHEN d.dimension < 0 THEN '' WHEN e.group_values[d.dimension + 1] IS NULL THEN '0' ELSE '1' || e.group_values[d.dimension + 1] END AS value_key,
           e.value, e."timestamp", e.created_at, e.id
         FROM (?) AS e CROSS JOIN unnest(?::int[]) AS d(dimension)
       ), hours AS MATERIALIZED (
         SELECT dimension, hour, value_key, sum(value) AS sum, count(*) AS count, max(value) AS max, max("timestamp") AS last_at
         FROM x GROUP BY dimension, hour, value_key
       ), hour_latest AS MATERIALIZED (
         SELECT DISTINCT ON (x.dimension, x.hour, x.value_key) x.dimension, x.hour, x.value_key, x.value, x."timestamp", x.created_at, x.id
         FROM x JOIN hours h ON h.dimension = x.dimension AND h.hour = x.hour AND h.value_key = x.value_key AND h.last_at = x."timestamp"
         ORDER BY x.dimension, x.hour, x.value_key, x.created_at DESC, x.id DESC
       ), day_latest AS (
         SELECT DISTINCT ON (dimension, ${day('hour')}, value_key) dimension, ${day('hour')} AS day, value_key, value, "timestamp", created_at, id
         FROM hour_latest
         ORDER BY dimension, ${day('hour')}, value_key, "timestamp" DESC, created_at DESC, id DESC
       ), days AS (
         SELECT dimension, ${day('hour')} AS day, value_key, sum(sum) AS sum, sum(count) AS count, max(max) AS max
         FROM hours GROUP BY dimension, day, value_key
       ), meter AS (SELECT id, organisation_id FROM meters WHERE id = ?)
       SELECT meter.id AS meter_id, meter.organisation_id, 'hour' AS grain, h.dimension, h.hour AS bucket_start, h.value_key, h.sum, h.count, h.max,
         l.value AS latest_value, l."timestamp" AS latest_timestamp, l.created_at AS latest_created_at, l.id AS latest_id
       FROM meter, hours h JOIN hour_latest l ON l.dimension = h.dimension AND l.hour = h.hour AND l.value_key = h.value_key
       UNION ALL
       SELECT meter.id, meter.organisation_id, 'day', d.dimension, d.day, d.value_key, d.sum, d.count, d.max, l.value, l."timestamp", l.created_at, l.id
       FROM meter, days d JOIN day_latest l ON l.dimension = d.dimension AND l.day = d.day AND l.value_key = d.value_key
     ) AS folded
     ORDER BY grain, dimension, bucket_start, group_value`,
    [events, dimensionsOf(groupBy), meterId],
  );
}

/** The parts of a fold of rollups (or of totals): the same, their own folded. */
const ROLLUP_PARTS = [
  'sum(r.sum)',
  'sum(r.count)',
  'max(r.max)',
  ...['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'].map((column) => `(array_agg(r.${column} ORDER BY r.latest_timestamp DESC, r.latest_created_at DESC, r.latest_id DESC))[1]`),
].join(', ');

const incomingIsLater = '(excluded.latest_timestamp, excluded.latest_created_at, excluded.latest_id) > (meter_rollup_totals.latest_timestamp, meter_rollup_totals.latest_created_at, meter_rollup_totals.latest_id)';

/**
 * The statement that adds `events` (a meter's events as `meterEvents` selects them: each with its group
 * values) to the totals: folded per total row, in key order (so that concurrent statements lock rows in one
 * order), then added to what each row holds.
 */
export function totalsAddition(db: Knex, meter: { id: string; groupBy: readonly string[] }, events: Knex.QueryBuilder): { sql: string; bindings: readonly Knex.Value[] } {
  const { sql, bindings } = totalsOfEvents(db, meter.id, meter.groupBy, events).toSQL();
  return {
    sql: `INSERT INTO meter_rollup_totals (${COLUMNS}) ${sql}
     ON CONFLICT ${KEY} DO UPDATE SET
       sum = meter_rollup_totals.sum + excluded.sum,
       count = meter_rollup_totals.count + excluded.count,
       max = greatest(meter_rollup_totals.max, excluded.max),
       ${['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'].map((column) => `${column} = CASE WHEN ${incomingIsLater} THEN excluded.${column} ELSE meter_rollup_totals.${column} END`).join(',\n       ')}`,
    bindings,
  };
}

/**
 * Inside a chunk's transaction: the statement that records the chunk as pending for the meter's totals, one
 * row naming the batch, the chunk's time and the first and last quarter hour of `folded` (the name of the
 * expression holding the chunk's rollup rows of the meter, whose latest events all carry the chunk's time
 * as `created_at`); no row when it holds none.
 */
export function pendingChunk(meterId: string, batchId: string, folded: string): InsertAlongside {
  return {
    sql: `INSERT INTO meter_totals_pending (meter_id, organisation_id, batch_id, created_at, first_bucket, last_bucket)
     SELECT ?::text, organisation_id, ?::text, min(latest_created_at), min(bucket_start), max(bucket_start) FROM ${folded} GROUP BY organisation_id`,
    bindings: [meterId, batchId],
  };
}

/**
 * The events of the chunks a statement takes out of `meter_totals_pending` as `taken` (see
 * `takePendingChunks`), as a source `meterEvents` reads: each chunk's events are found by the
 * (organisation, created_at) index, narrowed to its batch (a lateral subquery kept whole by OFFSET 0, so
 * that the planner probes the index per chunk rather than scanning the table).
 */
export const TAKEN_CHUNKS_EVENTS = `(SELECT e.* FROM (SELECT DISTINCT organisation_id, batch_id, created_at FROM taken) AS chunk
   CROSS JOIN LATERAL (
     SELECT e.organisation_id, e.customer_entity_id, e.metric, e.value, e."timestamp", e.metadata, e.created_at, e.id FROM usage_events e
     WHERE e.organisation_id = chunk.organisation_id AND e.created_at = chunk.created_at AND e.batch_id = chunk.batch_id
     OFFSET 0
   ) AS e) AS usage_events`;

/**
 * The common table expression that takes the meter's `limit` oldest pending chunks out, to prefix
 * `totalsAddition` over their events.
 */
export function takePendingChunks(meterId: string, limit: number): { sql: string; bindings: readonly Knex.Value[] } {
  return {
    sql: `WITH taken AS (
       DELETE FROM meter_totals_pending WHERE (meter_id, batch_id, created_at) IN (
         SELECT meter_id, batch_id, created_at FROM meter_totals_pending WHERE meter_id = ? ORDER BY created_at LIMIT ?)
       RETURNING organisation_id, batch_id, created_at)`,
    bindings: [meterId, limit],
  };
}

/** The UTC days [from, to) touches, each by its first instant. */
export function utcDaysOf(from: Date, to: Date): Date[] {
  const days: Date[] = [];
  for (let day = Math.floor(from.getTime() / DAY_MS) * DAY_MS; day < to.getTime(); day += DAY_MS) days.push(new Date(day));
  return days;
}

/**
 * Under the exclusive rollup lock, after the meter's pending chunks were folded and its rollups rebuilt: the
 * totals of each UTC day given (its day row and its hours) replaced by the fold of the day's rollups of every
 * entity.
 */
export async function rebuildTotals(trx: Knex, meter: { id: string; groupBy: readonly string[] }, days: readonly Date[]): Promise<void> {
  for (const day of days) {
    const end = new Date(day.getTime() + DAY_MS);
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
 * days and hours from the totals, unless a chunk still pending for the totals touches them; those and the
 * quarter hours between from the rollups of every entity. One statement, so one snapshot: a chunk is read
 * either folded into the totals or pending and in the rollups. Answers null when a window does not start
 * and end on a quarter hour (raw events are read then).
 */
export async function readTotals(db: Knex, query: TotalsQuery): Promise<{ rows: Array<{ window: number; value: string | null; group: string | null }>; total: number } | null> {
  const pieces = query.segments.flatMap((segment) => piecesOf(segment.from.getTime(), segment.to.getTime()).map((piece) => ({ ...piece, window: segment.window })));
  if (pieces.some((piece) => piece.grain === 'raw')) return null;
  if (pieces.length === 0) return { rows: [], total: 0 };
  const narrowed = (column: string) => (query.narrowing ? `AND ${column} = any(?::text[])` : '');
  const narrowing = query.narrowing ? [[...query.narrowing]] : [];
  const group = (column: string) => (query.dimension < 0 ? 'NULL::text' : column);
  const parts = ['sum', 'count', 'max', 'latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'];
  const result = await db.raw<{ rows: Array<{ win: number; group_value: string | null; value: string | null; total: string }> }>(
    `WITH piece AS (
       SELECT p.win, p.grain, p.piece_from, p.piece_to,
         p.grain = 'quarter' OR EXISTS (SELECT 1 FROM meter_totals_pending m WHERE m.meter_id = ? AND m.first_bucket < p.piece_to AND m.last_bucket >= p.piece_from) AS from_rollups
       FROM unnest(?::int[], ?::text[], ?::timestamptz[], ?::timestamptz[]) AS p(win, grain, piece_from, piece_to)
     ), parts AS (
       SELECT piece.win AS win, ${group('t.group_value[1]')} AS group_value, ${parts.map((column) => `t.${column}`).join(', ')}
       FROM piece
       JOIN meter_rollup_totals t ON t.meter_id = ? AND t.grain = piece.grain AND t.dimension = ? AND t.bucket_start >= piece.piece_from AND t.bucket_start < piece.piece_to
       WHERE NOT piece.from_rollups ${narrowed('t.group_value[1]')}
       UNION ALL
       SELECT piece.win AS win, ${group('r.group_values[?::int]')} AS group_value, ${parts.map((column) => `r.${column}`).join(', ')}
       FROM piece
       JOIN meter_rollups r ON r.meter_id = ? AND r.bucket_start >= piece.piece_from AND r.bucket_start < piece.piece_to
       WHERE piece.from_rollups ${narrowed('r.group_values[?::int]')}
     )
     SELECT p.win, p.group_value, ${foldOfParts(query.aggregation)} AS value, count(*) OVER () AS total
     FROM parts p
     GROUP BY p.win, p.group_value
     ORDER BY p.win, p.group_value ASC NULLS LAST
     LIMIT ? OFFSET ?`,
    [
      query.meterId,
      pieces.map((piece) => piece.window),
      pieces.map((piece) => piece.grain),
      pieces.map((piece) => sqlInstant(new Date(piece.from))),
      pieces.map((piece) => sqlInstant(new Date(piece.to))),
      query.meterId,
      query.dimension,
      ...narrowing,
      ...(query.dimension < 0 ? [] : [query.dimension + 1]),
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
