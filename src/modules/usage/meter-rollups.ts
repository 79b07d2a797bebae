import type { Knex } from 'knex';
import { dimensionValueSql } from './dimension-value';
import type { Aggregation, InsertAlongside } from './usage.repository';
import { applyFilters, pathOf, type MetadataFilter } from './usage-aggregates';
import { BUCKET_MINUTES, BUCKET_MS, bucketOf } from './rollup-buckets';
import { pendingChunk, rebuildTotals, TAKEN_CHUNKS_EVENTS, takePendingChunks, totalsAddition, utcDaysOf } from './rollup-totals';
import { sqlInstant } from '../../db/dates';

/**
 * Meter rollups: the usage of a meter folded per customer entity, 15-minute bucket and group values (the
 * values at the meter's groupBy keys, in order, as text; null where an event lacks one). A bucket holds the
 * sum, count and maximum of its events' values and the value of its latest event by ("timestamp",
 * created_at, id), the order `aggregateExpression` takes the latest in, with those three columns kept to
 * merge by. Every time zone's offset is a whole number of quarter hours, so its hours, days and months
 * start on a bucket edge.
 */

/** What a meter's rollups are kept by: the meter as it is defined now. */
export interface RollupMeter {
  id: string;
  metric: string;
  aggregation: Aggregation;
  groupBy: readonly string[];
  filters: readonly MetadataFilter[];
}

/**
 * The two-key advisory lock namespace of an organisation's rollups. A usage chunk holds the shared form while
 * it reads the organisation's meters and adds to their rollups; a meter created or redefined, an event
 * edited or deleted, and each backfill slice hold the exclusive form while they replace rollups from raw
 * events. So a replacement never runs while a chunk that it cannot see yet is adding, and a chunk that
 * starts after it adds on top of what it wrote.
 */
const ROLLUP_LOCK_NAMESPACE = 7305;

/** Inside a transaction: the organisation's rollup lock, until commit. */
export async function lockRollups(trx: Knex, organisationId: string, mode: 'shared' | 'exclusive'): Promise<void> {
  const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
  await trx.raw(`SELECT ${fn}(?, hashtext(?))`, [ROLLUP_LOCK_NAMESPACE, organisationId]);
}

/** The bucket an instant falls in: `date_bin` on 2000-01-01 UTC, SQL's twin of `bucketOf`. */
const BUCKET_SQL = `date_bin('${BUCKET_MINUTES} minutes', usage_events."timestamp", timestamptz '2000-01-01 00:00:00+00')`;

/** The group values of an event, as the text[] the rollup key holds: each a `dimensionValue`. */
function groupValuesOf(db: Knex, groupBy: readonly string[]): Knex.Raw {
  if (groupBy.length === 0) return db.raw("'{}'::text[]");
  const value = dimensionValueSql('(usage_events.metadata #>> ?::text[])');
  const uses = value.split('?').length - 1;
  return db.raw(`ARRAY[${groupBy.map(() => value).join(', ')}]::text[]`, groupBy.flatMap((key) => Array.from({ length: uses }, () => pathOf(key))));
}

const COLUMNS = 'meter_id, organisation_id, customer_entity_id, bucket_start, group_values, sum, count, max, latest_value, latest_timestamp, latest_created_at, latest_id';
export const LATEST = (column: string) => `(array_agg(${column} ORDER BY "timestamp" DESC, created_at DESC, id DESC))[1]`;

/**
 * The events of `source` that count for the meter (its metric's, meeting its filters), each with its bucket
 * and group values. The source (the rows an INSERT returns, a range of events) is read under the name
 * `usage_events`, so that every condition holds as written.
 */
export function meterEvents(db: Knex, meter: RollupMeter, source: string | Knex.Raw): Knex.QueryBuilder {
  const from: Knex.QueryBuilder = typeof source === 'string' ? db(`${source} as usage_events`) : db.from(source);
  const events = from
    .where('usage_events.metric', meter.metric)
    .select(
      'organisation_id',
      'customer_entity_id',
      'value',
      'timestamp',
      'created_at',
      'id',
      db.raw(`${BUCKET_SQL} AS bucket_start`),
      db.raw('? AS group_values', [groupValuesOf(db, meter.groupBy)]),
    );
  applyFilters(db, events, meter.filters);
  return events;
}

/**
 * The meter's events of `source` folded per rollup key, in key order, each column named as the rollups'
 * own: the SELECT both ingestion and rebuilding insert.
 */
function foldedEvents(db: Knex, meter: RollupMeter, source: string | Knex.Raw): Knex.QueryBuilder {
  return db
    .from(meterEvents(db, meter, source).as('e'))
    .select(
      db.raw('?::text AS meter_id', [meter.id]),
      'organisation_id',
      'customer_entity_id',
      'bucket_start',
      'group_values',
      db.raw('sum(value) AS sum'),
      db.raw('count(*) AS count'),
      db.raw('max(value) AS max'),
      db.raw(`${LATEST('value')} AS latest_value`),
      db.raw(`${LATEST('"timestamp"')} AS latest_timestamp`),
      db.raw(`${LATEST('created_at')} AS latest_created_at`),
      db.raw(`${LATEST('id')} AS latest_id`),
    )
    .groupBy('organisation_id', 'customer_entity_id', 'bucket_start', 'group_values')
    .orderBy(['customer_entity_id', 'bucket_start', 'group_values']);
}

/** Meters in id order: the order chunks and folds take their rows' locks in, so that they never deadlock. */
const byId = (meters: RollupMeter[]): RollupMeter[] => meters.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The latest of the stored row and the incoming one, by the order of `aggregateExpression`. */
const incomingIsLater = '(excluded.latest_timestamp, excluded.latest_created_at, excluded.latest_id) > (meter_rollups.latest_timestamp, meter_rollups.latest_created_at, meter_rollups.latest_id)';
const latestColumn = (column: string) => `${column} = CASE WHEN ${incomingIsLater} THEN excluded.${column} ELSE meter_rollups.${column} END`;

/**
 * Inside a usage chunk's transaction, which holds the shared rollup lock: for each meter of a metric among
 * `metrics`, the common table expressions of the chunk's insert (see `insertEvents`) that fold the rows of
 * `source` (the name of the expression holding the events just stored, as the insert returns them) per
 * rollup key, add them to the meter's rollups (INSERT … ON CONFLICT DO UPDATE, rows in key order so that
 * concurrent chunks lock rollup rows in one order), and record the chunk (of batch `batchId`) as pending for
 * the meter's totals, from the folded rows: their quarter hours, and the chunk's time as every one of its
 * events carries it. The events are folded as they are written, without reading them back.
 */
export function rollupAdditions(db: Knex, meters: readonly RollupMeter[], metrics: ReadonlySet<string>, source: string, batchId: string): InsertAlongside[] {
  return byId(meters.filter((meter) => metrics.has(meter.metric)))
    .flatMap((meter, index) => {
      const folded = `rollup_rows_${index}`;
      const { sql, bindings } = foldedEvents(db, meter, source).toSQL();
      return [
        { name: folded, sql, bindings },
        {
          sql: `INSERT INTO meter_rollups (${COLUMNS}) SELECT ${COLUMNS} FROM ${folded}
       ON CONFLICT (meter_id, customer_entity_id, bucket_start, group_values) DO UPDATE SET
         sum = meter_rollups.sum + excluded.sum,
         count = meter_rollups.count + excluded.count,
         max = greatest(meter_rollups.max, excluded.max),
         ${['latest_value', 'latest_timestamp', 'latest_created_at', 'latest_id'].map(latestColumn).join(',\n         ')}`,
          bindings: [],
        },
        // The organisation-wide totals take the chunk later (see `foldPendingTotals`).
        pendingChunk(meter.id, batchId, folded),
      ];
    });
}

/** A time range of buckets to rebuild: [from, to), both bucket edges. */
export interface BucketRange {
  customerEntityId: string | null;
  from: Date;
  to: Date;
}

/**
 * Under the exclusive rollup lock: the meter's rollups in the ranges replaced by the fold of every raw event
 * in them (an edit, a deletion, a backfill slice). Replacing, not adjusting: a maximum or a latest value
 * cannot be taken back. Answers the number of the metric's events read.
 */
export async function rebuildRollups(trx: Knex, organisationId: string, meter: RollupMeter, ranges: readonly BucketRange[]): Promise<number> {
  // Chunks still pending are folded into the totals first: the totals of the days rebuilt below are then
  // replaced whole, those of other days hold the chunks' events as they stand, and nothing pending is left to
  // add twice.
  while ((await foldPendingOf(trx, meter)) === FOLD_CHUNKS);
  let read = 0;
  const days = new Set<number>();
  for (const range of ranges) {
    const removed = trx('meter_rollups').where('meter_id', meter.id).where('bucket_start', '>=', range.from).where('bucket_start', '<', range.to);
    if (range.customerEntityId !== null) removed.where('customer_entity_id', range.customerEntityId);
    await removed.delete();
    const events = eventsIn(trx, organisationId, meter.metric, range);
    const { sql, bindings } = foldedEvents(trx, meter, events).toSQL();
    await trx.raw(`INSERT INTO meter_rollups (${COLUMNS}) ${sql}`, bindings);
    const [row] = await trx.from(events).count<Array<{ count: string }>>({ count: '*' });
    read += Number(row?.count ?? 0);
    for (const day of utcDaysOf(range.from, range.to)) days.add(day.getTime());
  }
  // The organisation-wide totals of every UTC day the ranges touch, folded anew from the rollups just written.
  await rebuildTotals(trx, meter, [...days].sort((a, b) => a - b).map((day) => new Date(day)));
  return read;
}

/**
 * The metric's events in a range, as a subquery named `usage_events`: of one entity, a range of the
 * (organisation, metric, entity, timestamp) index; of every entity, one such range per entity of the
 * organisation (a lateral join), so that a day of a backfill never scans the metric's other days.
 */
function eventsIn(db: Knex, organisationId: string, metric: string, range: BucketRange): Knex.Raw {
  const columns = 'usage_events.organisation_id, usage_events.customer_entity_id, usage_events.metric, usage_events.value, usage_events."timestamp", usage_events.metadata, usage_events.created_at, usage_events.id';
  const inRange = 'usage_events.organisation_id = ? AND usage_events.metric = ? AND usage_events."timestamp" >= ? AND usage_events."timestamp" < ?';
  const bounds = [organisationId, metric, sqlInstant(range.from), sqlInstant(range.to)];
  if (range.customerEntityId !== null) {
    return db.raw(`(SELECT ${columns} FROM usage_events WHERE ${inRange} AND usage_events.customer_entity_id = ?) AS usage_events`, [...bounds, range.customerEntityId]);
  }
  return db.raw(
    // OFFSET 0 keeps the lateral subquery a subquery: one index range per entity, whatever the estimates.
    `(SELECT ranged.* FROM entities CROSS JOIN LATERAL (SELECT ${columns} FROM usage_events WHERE ${inRange} AND usage_events.customer_entity_id = entities.id OFFSET 0) AS ranged
      WHERE entities.organisation_id = ?) AS usage_events`,
    [...bounds, organisationId],
  );
}

/** Every rollup of the meter removed: it is redefined, and fills anew. */
export async function dropRollups(trx: Knex, meterId: string): Promise<void> {
  await trx('meter_rollups').where('meter_id', meterId).delete();
  await trx('meter_rollup_totals').where('meter_id', meterId).delete();
  await trx('meter_totals_pending').where('meter_id', meterId).delete();
}

/** The meter's events of `source` (a subquery named `usage_events`) added to its organisation-wide totals. */
export async function addEventsToTotals(trx: Knex, meter: RollupMeter, source: Knex.Raw): Promise<void> {
  const { sql, bindings } = totalsAddition(trx, meter, meterEvents(trx, meter, source));
  await withFoldPlan(trx, () => trx.raw(sql, bindings));
}

/**
 * The chunks a fold takes at most per statement: about 100,000 events, so that a backlog (a worker that was
 * down, Postgres that was) is folded in statements of bounded size and time, each its own transaction when
 * the worker folds.
 */
const FOLD_CHUNKS = 100;

/**
 * The meter's oldest pending chunks (`FOLD_CHUNKS` at most) taken out and their events added to the totals:
 * one statement. Answers the number of chunks taken; fewer than `FOLD_CHUNKS` means none is left.
 */
async function foldPendingOf(trx: Knex, meter: RollupMeter): Promise<number> {
  const take = takePendingChunks(meter.id, FOLD_CHUNKS);
  const add = totalsAddition(trx, meter, meterEvents(trx, meter, trx.raw(TAKEN_CHUNKS_EVENTS)));
  const result = await withFoldPlan(trx, () =>
    trx.raw<{ rows: Array<{ taken: number }> }>(`${take.sql}, added AS (${add.sql}) SELECT count(*)::int AS taken FROM taken`, [...take.bindings, ...add.bindings]),
  );
  return result.rows[0]?.taken ?? 0;
}

/**
 * `statement` (a fold of events into totals) planned without merge joins and without sequential scans, the
 * settings restored after it for the rest of the transaction (a failed statement aborts the transaction,
 * which drops them with it). Without merge joins, because the planner's guess of the aggregates' sizes
 * would otherwise sort every expanded event to merge it with its row; without sequential scans, because the
 * events of a chunk are found by `created_at`, whose statistics may be stale (a large import shares one
 * value, and a large table is analysed again only after a tenth of it is new), and a scan of the whole
 * event table per fold is the one plan that must never be chosen. And without JIT compilation: the costs
 * the two settings add make Postgres compile the statement, which takes longer than running it.
 */
async function withFoldPlan<T>(trx: Knex, statement: () => Promise<T>): Promise<T> {
  await trx.raw("SELECT set_config('enable_mergejoin', 'off', true), set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)");
  const result = await statement();
  await trx.raw('RESET enable_mergejoin; RESET enable_seqscan; RESET jit');
  return result;
}

/**
 * The two-key advisory lock namespace of folding an organisation's pending chunks into its totals: one fold
 * at a time per organisation, so that two never add the same chunk (each takes its chunks out with a DELETE,
 * which a second fold would wait on, then find gone).
 */
const FOLD_LOCK_NAMESPACE = 7306;

/**
 * Inside a transaction, under the organisation's shared rollup lock (no rebuild runs meanwhile): the chunks
 * pending for the totals of its meters taken out and added, meter by meter, `FOLD_CHUNKS` at most per meter.
 * Answers false without doing anything when another fold of the organisation holds its lock (that one, or
 * the next, takes what is here); else whether chunks are left (the caller folds again, in a new transaction).
 */
export async function foldPendingTotals(trx: Knex, organisationId: string, meters: readonly RollupMeter[]): Promise<{ more: boolean } | false> {
  const locked = await trx.raw<{ rows: Array<{ locked: boolean }> }>('SELECT pg_try_advisory_xact_lock(?, hashtext(?)) AS locked', [FOLD_LOCK_NAMESPACE, organisationId]);
  if (!locked.rows[0]?.locked) return false;
  const pending = new Set(await trx('meter_totals_pending').where('organisation_id', organisationId).distinct('meter_id').pluck('meter_id'));
  const folded = byId(meters.filter((meter) => pending.has(meter.id)));
  let more = false;
  for (const meter of folded) if ((await foldPendingOf(trx, meter)) === FOLD_CHUNKS) more = true;
  return { more };
}

/**
 * The first instant at or after `from` (any, when null) holding an event of the metric: one probe of the
 * (organisation, metric, entity, timestamp) index per entity of the organisation, instead of a scan of
 * the metric's every event.
 */
export async function nextEventAt(trx: Knex, organisationId: string, metric: string, from: Date | null): Promise<Date | null> {
  const result = await trx.raw<{ rows: Array<{ next: Date | null }> }>(
    `SELECT min(first."timestamp") AS next
     FROM entities
     CROSS JOIN LATERAL (
       SELECT "timestamp" FROM usage_events
       WHERE usage_events.organisation_id = ? AND usage_events.metric = ? AND usage_events.customer_entity_id = entities.id AND usage_events."timestamp" >= ?::timestamptz
       ORDER BY "timestamp" LIMIT 1
     ) AS first
     WHERE entities.organisation_id = ?`,
    [organisationId, metric, from ? sqlInstant(from) : '-infinity', organisationId],
  );
  return result.rows[0]?.next ?? null;
}

/**
 * The ranges of buckets that changed events touch: each event's entity and bucket, before and after the
 * change, per metric.
 */
export function touchedBuckets(events: ReadonlyArray<{ metric: string; customer_entity_id: string; timestamp: Date }>): Map<string, BucketRange[]> {
  const byMetric = new Map<string, Map<string, BucketRange>>();
  for (const event of events) {
    const from = bucketOf(event.timestamp);
    const ranges = byMetric.get(event.metric) ?? new Map<string, BucketRange>();
    ranges.set(`${event.customer_entity_id}|${from.getTime()}`, { customerEntityId: event.customer_entity_id, from, to: new Date(from.getTime() + BUCKET_MS) });
    byMetric.set(event.metric, ranges);
  }
  return new Map([...byMetric].map(([metric, ranges]) => [metric, [...ranges.values()]]));
}
