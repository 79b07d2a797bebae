import type { Knex } from 'knex';
import { dimensionValue, dimensionValueSql } from './dimension-value';
import type { Aggregation } from './usage.repository';
import { onBucketEdge } from './rollup-buckets';
import { NO_DIMENSION, readTotals } from './rollup-totals';
import { sqlInstant } from '../../db/dates';

/**
 * A condition on an event's metadata. `key` is a dotted path into the metadata object; the value found
 * there is compared as text (a number 5 as "5", true as "true"); a missing key and a JSON null are both
 * absent. `in` holds when the value is present and one of `values`; `not_in` when it is absent or none of
 * them; `exists` when it is present; `not_exists` when it is absent.
 */
export type MetadataFilter = { key: string; operator: 'in' | 'not_in'; values: string[] } | { key: string; operator: 'exists' | 'not_exists' };

/**
 * How a meter folds events: the aggregation, for unique_count the metadata field counted, and the filters
 * every event must meet to count at all.
 */
export interface AggregationSpec {
  aggregation: Aggregation;
  uniqueField: string | null;
  filters: readonly MetadataFilter[];
  /**
   * The meter's rollups, when the spec is a meter's as it is defined now: they are read instead of the raw
   * events where they answer exactly (see `readsRollups`). Absent, the raw events are read.
   */
  rollups?: MeterRollups;
}

/** A meter's rollups: which meter, its groupBy keys in the order its group values hold them, whether filled. */
export interface MeterRollups {
  meterId: string;
  groupBy: readonly string[];
  /** Every event up to now is in them: the meter's backfill completed. */
  complete: boolean;
}

/** Windows a query can cut time into: clock hours, calendar days or calendar months of a time zone. */
export type WindowSize = 'hour' | 'day' | 'month';

/**
 * One window of events to fold: one customer entity's (null: every entity's) from `from` (inclusive) to
 * `to` (exclusive), either end open when null. Windows of the same `key` fold together, as one group.
 */
export interface UsageMember {
  key: string;
  customerEntityId: string | null;
  from: Date | null;
  to: Date | null;
}

export interface UsageQuery {
  organisationId: string;
  metric: string;
  spec: AggregationSpec;
  members: readonly UsageMember[];
  /** Also by calendar day or month in `timeZone` (UTC when absent), each period named by its first day. */
  byPeriod?: 'day' | 'month';
  timeZone?: string;
  /** Also by the metadata values at these dotted keys (null where an event lacks one), in this order. */
  dimensions?: readonly string[];
}

/**
 * Usage cut into windows of a time zone and split by dimensions: the metadata values at `dimensions`
 * (dotted paths; null where an event lacks one) and, when `byCustomer`, the customer of the event's entity.
 */
export interface UsageWindowQuery extends Omit<UsageQuery, 'byPeriod' | 'timeZone' | 'dimensions'> {
  windowSize: WindowSize;
  timeZone: string;
  dimensions: readonly string[];
  /** Values each named dimension must take (an `in` filter on its metadata value). */
  narrowing?: Readonly<Record<string, readonly string[]>>;
  byCustomer: boolean;
  /** Rows in order of window, then dimensions (customer last), nulls last. */
  limit: number;
  offset: number;
}

export interface UsageWindow {
  /** The window's ends as ISO 8601 instants in UTC, as `Date#toISOString` writes them. */
  windowStart: string;
  windowEnd: string;
  /** The values of the dimensions, in the query's order, then the customer id when by customer. */
  groups: Array<string | null>;
  value: string | null;
}

/** A group's aggregate, its period when asked by period, and its dimension values when asked by dimensions. */
export interface UsageGroup {
  key: string;
  period: string | null;
  /** The values of the query's dimensions, in its order (empty when it names none). */
  dimensions: Array<string | null>;
  value: string | null;
}

/** One SQL expression per aggregation, all served by the (organisation, metric, entity, timestamp) index. */
function aggregateExpression(db: Knex, spec: AggregationSpec): Knex.Raw {
  switch (spec.aggregation) {
    case 'sum':
      return db.raw('coalesce(sum(value), 0)::text');
    case 'count':
      return db.raw('count(*)::text');
    case 'max':
      return db.raw('max(value)::text');
    case 'unique_count':
      return db.raw('count(distinct metadata ->> ?)::text', [spec.uniqueField]);
    case 'latest':
      return db.raw('(array_agg(value order by "timestamp" desc, created_at desc, id desc))[1]::text');
  }
}

/** What a group with no event folds to: nothing counted is 0, no value to take is null. */
export function emptyAggregate(spec: AggregationSpec): string | null {
  return spec.aggregation === 'sum' || spec.aggregation === 'count' || spec.aggregation === 'unique_count' ? '0' : null;
}

/** A dotted key as the text[] path `#>>` takes. */
export const pathOf = (key: string): string[] => key.split('.');

/** The metadata value at a dotted key, as text: `metadata #>> '{a,b}'`, the path a parameter. */
const valueAt = (db: Knex, key: string) => db.raw('(usage_events.metadata #>> ?::text[])', [pathOf(key)]);

/** The dimension value at a dotted key (`dimensionValue` of the text there), as the rollups key it. */
const DIMENSION_AT = dimensionValueSql('(usage_events.metadata #>> ?::text[])');
const dimensionAt = (db: Knex, key: string) => db.raw(DIMENSION_AT, Array.from({ length: DIMENSION_AT.split('?').length - 1 }, () => pathOf(key)));

/** A query's narrowing to dimension values, each value as rollups and groups hold it. */
const narrowingOf = (query: UsageQuery | UsageWindowQuery): Array<[string, string[]]> =>
  Object.entries('narrowing' in query ? query.narrowing ?? {} : {}).map(([key, values]) => [key, values.map(dimensionValue)]);

/** The spec's filters, each a parameterised condition on the event's metadata. */
export function applyFilters(db: Knex, query: Knex.QueryBuilder, filters: readonly MetadataFilter[]): void {
  for (const filter of filters) {
    const value = valueAt(db, filter.key);
    switch (filter.operator) {
      case 'in':
        query.whereRaw('? = any(?::text[])', [value, filter.values]);
        break;
      case 'not_in':
        query.whereRaw('(? is null or not (? = any(?::text[])))', [value, value, filter.values]);
        break;
      case 'exists':
        query.whereRaw('? is not null', [value]);
        break;
      case 'not_exists':
        query.whereRaw('? is null', [value]);
        break;
    }
  }
}

/**
 * Where a query reads: the raw events, or the meter's rollups. Each names the table, its time and entity
 * columns, the value at a dimension and the aggregate, so that one query shape serves both.
 */
interface Source {
  table: 'usage_events' | 'meter_rollups';
  /** The instant a row counts at: the event's timestamp, the bucket's start. */
  time: string;
  valueAt(key: string): Knex.Raw;
  aggregate: Knex.Raw;
  /** The rows of the query's metric (or meter) that meet its conditions. */
  restrict(query: Knex.QueryBuilder): void;
}

function rawSource(db: Knex, query: UsageQuery | UsageWindowQuery): Source {
  const narrowing = narrowingOf(query);
  return {
    table: 'usage_events',
    time: 'usage_events."timestamp"',
    valueAt: (key) => dimensionAt(db, key),
    aggregate: aggregateExpression(db, query.spec),
    restrict: (events) => {
      events.where({ 'usage_events.organisation_id': query.organisationId, 'usage_events.metric': query.metric });
      applyFilters(db, events, query.spec.filters);
      for (const [key, values] of narrowing) events.whereRaw('? = any(?::text[])', [dimensionAt(db, key), values]);
    },
  };
}

/** The rollups' fold of their buckets, per aggregation (never unique_count, which reads raw events). */
function rollupExpression(db: Knex, spec: AggregationSpec): Knex.Raw {
  switch (spec.aggregation) {
    case 'sum':
      return db.raw('coalesce(sum(meter_rollups.sum), 0)::text');
    case 'count':
      return db.raw('sum(meter_rollups.count)::text');
    case 'max':
      return db.raw('max(meter_rollups.max)::text');
    case 'unique_count':
      throw new Error('unique counts are read from raw events');
    case 'latest':
      return db.raw('(array_agg(meter_rollups.latest_value order by meter_rollups.latest_timestamp desc, meter_rollups.latest_created_at desc, meter_rollups.latest_id desc))[1]::text');
  }
}

function rollupSource(db: Knex, query: UsageQuery | UsageWindowQuery, rollups: MeterRollups): Source {
  const narrowing = narrowingOf(query);
  const position = (key: string) => rollups.groupBy.indexOf(key) + 1;
  return {
    table: 'meter_rollups',
    time: 'meter_rollups.bucket_start',
    valueAt: (key) => db.raw(`meter_rollups.group_values[${position(key)}]`),
    aggregate: rollupExpression(db, query.spec),
    restrict: (rows) => {
      rows.where('meter_rollups.meter_id', rollups.meterId);
      for (const [key, values] of narrowing) rows.whereRaw(`meter_rollups.group_values[${position(key)}] = any(?::text[])`, [values]);
    },
  };
}

/** The instant before which some time zone's offset was not a whole number of quarter hours (Liberia, to 1972). */
export const QUARTER_HOUR_ZONES_SINCE = new Date('1973-01-01T00:00:00Z');

/**
 * Whether the meter's rollups answer the query exactly, as far as its shape tells: they are complete, the
 * aggregation is not unique_count (counted exactly over raw events), every window starts and ends on a
 * bucket edge (or is open), and the dimensions and narrowed keys are the meter's groupBy keys. Windows
 * and periods of a time zone also need every bucket inside one of them, true where the zone's offset is a
 * whole number of quarter hours: `zoneNeedsCheck` says when that is to be checked against the data.
 */
export function readsRollups(
  spec: AggregationSpec,
  members: readonly UsageMember[],
  keys: readonly string[],
  timeZone: string | null,
): { rollups: MeterRollups; zoneNeedsCheck: boolean } | null {
  const { rollups } = spec;
  if (!rollups?.complete || spec.aggregation === 'unique_count') return null;
  if (!members.every((member) => (member.from === null || onBucketEdge(member.from)) && (member.to === null || onBucketEdge(member.to)))) return null;
  if (!keys.every((key) => rollups.groupBy.includes(key))) return null;
  const zoneNeedsCheck = timeZone !== null && timeZone !== 'UTC' && members.some((member) => member.from === null || member.from < QUARTER_HOUR_ZONES_SINCE);
  return { rollups, zoneNeedsCheck };
}

/** Where the query reads: the meter's rollups when they answer it exactly, otherwise raw events. */
async function sourceOf(db: Knex, query: UsageQuery | UsageWindowQuery, keys: readonly string[], timeZone: string | null): Promise<Source> {
  const reads = readsRollups(query.spec, query.members, keys, timeZone);
  if (!reads) return rawSource(db, query);
  if (reads.zoneNeedsCheck) {
    // Buckets from before every zone kept quarter hours are read raw: is there any?
    const old = await db('meter_rollups').where('meter_id', reads.rollups.meterId).where('bucket_start', '<', QUARTER_HOUR_ZONES_SINCE).first(db.raw('1 as one'));
    if (old) return rawSource(db, query);
  }
  return rollupSource(db, query, reads.rollups);
}

/** The rows of the query's windows that the source reads, joined to their windows. */
function rowsOf(db: Knex, query: UsageQuery | UsageWindowQuery, source: Source): Knex.QueryBuilder {
  const { members } = query;
  const { table } = source;
  const anyEntity = members.some((member) => member.customerEntityId === null);
  const openFrom = members.some((member) => member.from === null);
  const openTo = members.some((member) => member.to === null);
  const time = `${table}.${table === 'usage_events' ? 'timestamp' : 'bucket_start'}`;
  const rows = db(table).join(
    db.raw('unnest(?::text[], ?::text[], ?::timestamptz[], ?::timestamptz[]) as member(entity_id, group_key, window_from, window_to)', [
      members.map((member) => member.customerEntityId) as Knex.Value,
      members.map((member) => member.key),
      members.map((member) => (member.from ? sqlInstant(member.from) : null)) as Knex.Value,
      members.map((member) => (member.to ? sqlInstant(member.to) : null)) as Knex.Value,
    ]),
    (join) => {
      if (anyEntity) join.on((on) => on.onNull('member.entity_id').orOn('member.entity_id', `${table}.customer_entity_id`));
      else join.on('member.entity_id', `${table}.customer_entity_id`);
      if (openFrom) join.andOn((on) => on.onNull('member.window_from').orOn(time, '>=', 'member.window_from'));
      else join.andOn(time, '>=', 'member.window_from');
      if (openTo) join.andOn((on) => on.onNull('member.window_to').orOn(time, '<', 'member.window_to'));
      else join.andOn(time, '<', 'member.window_to');
    },
  );
  source.restrict(rows);
  return rows;
}

/**
 * The one way usage is aggregated, for billing and for reading alike: every window of the query is read in
 * one statement, joined to the events of the metric, and folded per group (and per period when asked). A
 * group with no event is absent. Where every window names its entity and both ends, the join is on the
 * (organisation, metric, entity, timestamp) index's columns alone; an open end or every entity widens it.
 */
export async function aggregateUsage(db: Knex, query: UsageQuery): Promise<UsageGroup[]> {
  if (query.members.length === 0) return [];
  const dimensions = query.dimensions ?? [];
  const source = await sourceOf(db, query, dimensions, query.byPeriod ? query.timeZone ?? 'UTC' : null);
  const period = query.byPeriod ? db.raw(`to_char(date_trunc('${query.byPeriod}', ${source.time} at time zone ?), 'YYYY-MM-DD')`, [query.timeZone ?? 'UTC']) : null;
  const names = dimensions.map((_, index) => `d${index}`);
  const keys = ['member.group_key', ...(period ? ['period'] : []), ...names];
  const rows = await rowsOf(db, query, source)
    .groupBy(keys)
    .orderByRaw(keys.map(() => '?? asc nulls last').join(', '), keys)
    .select<Array<{ group_key: string; period?: string; value: string | null } & Record<string, string | null>>>(
      'member.group_key',
      ...(period ? [db.raw('? as period', [period])] : []),
      ...dimensions.map((key, index) => db.raw('? as ??', [source.valueAt(key), names[index]!])),
      db.raw('? as value', [source.aggregate]),
    );
  return rows.map((row) => ({ key: row.group_key, period: row.period ?? null, dimensions: names.map((name) => row[name] ?? null), value: row.value }));
}

/**
 * An instant (a timestamptz column) as the text `Date#toISOString` writes: in the years 1 to 9999, `to_char`
 * in UTC; outside them (a window that ends in the year 10000, or starts before the year 1 in a zone west of
 * UTC), its milliseconds since the epoch, which `isoText` turns into the same text. A page of windows leaves
 * Postgres this way, so that a thousand rows are not each parsed into two dates and written back.
 */
export const ISO_TEXT = (column: string) =>
  `CASE WHEN ${column} >= timestamptz '0001-01-01 00:00:00+00' AND ${column} < timestamptz '10000-01-01 00:00:00+00'
     THEN to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
     ELSE ((extract(epoch from ${column}) * 1000)::bigint)::text END`;
export const isoText = (text: string) => (/^-?\d+$/.test(text) ? new Date(Number(text)).toISOString() : text);

/**
 * The first instant at which the clock of `timeZone` reads the local timestamp `local` (an SQL expression)
 * or later: where a local hour, day or month of the zone starts, and so where the one before it ends.
 * `local AT TIME ZONE` is that instant but around a clock change: a local time the clock skips has no
 * instant of its own, and one it reads twice has two, of which Postgres may take the later. So it is taken
 * as it is only when the clock read three hours before it what it reads then less three hours (no change in
 * between) and a quarter before it less than `local`; else the quarter hours of the three hours before are
 * searched for the first whose clock reads `local` or later (every zone's offsets and their changes fall on
 * quarter hours since 1973, and no change moves a clock by three hours). Chatham's clock goes back from
 * 03:45 to 02:45: 03:00 is read at 13:15Z and at 14:15Z, and the quarter before the second reads 02:45.
 */
export function firstInstantAt(db: Knex, local: string, timeZone: string): Knex.Raw {
  return db.raw(
    `CASE WHEN ((${local}) AT TIME ZONE ? - interval '15 minutes') AT TIME ZONE ? < (${local})
            AND ((${local}) AT TIME ZONE ? - interval '3 hours') AT TIME ZONE ? = (${local}) - interval '3 hours'
          THEN (${local}) AT TIME ZONE ?
     ELSE (SELECT min(q) FROM generate_series((${local}) AT TIME ZONE ? - interval '3 hours', (${local}) AT TIME ZONE ?, interval '15 minutes') AS q
           WHERE q AT TIME ZONE ? >= (${local})) END`,
    [timeZone, timeZone, timeZone, timeZone, timeZone, timeZone, timeZone, timeZone],
  );
}

/**
 * The same aggregation, per window of a time zone and per group of dimensions, one page of rows at a time
 * with the count of all. A window is the zone's local hour, day or month (`date_trunc` on the local time),
 * its ends the instants where that local period starts and ends, so a day across a clock change lasts 23
 * or 25 hours. Windows and groups with no event are absent.
 */
export async function aggregateUsageWindows(db: Knex, query: UsageWindowQuery): Promise<{ rows: UsageWindow[]; total: number }> {
  if (query.members.length === 0) return { rows: [], total: 0 };
  const source = await sourceOf(db, query, [...query.dimensions, ...Object.keys(query.narrowing ?? {})], query.timeZone);
  const totals = source.table === 'meter_rollups' ? await windowsFromTotals(db, query) : null;
  if (totals) return totals;
  const local = db.raw(`date_trunc('${query.windowSize}', ${source.time} at time zone ?)`, [query.timeZone]);
  const events = rowsOf(db, query, source);
  const groupColumns = [...query.dimensions.map((key, index) => db.raw('? as ??', [source.valueAt(key), `d${index}`])), ...(query.byCustomer ? [db.raw(`(select customer_id from entities where entities.id = ${source.table}.customer_entity_id) as ??`, [`d${query.dimensions.length}`])] : [])];
  const width = groupColumns.length;
  const names = Array.from({ length: width }, (_, index) => `d${index}`);
  const grouped = events
    .groupBy(['local_start', ...names])
    .select(
      db.raw('? as local_start', [local]),
      ...groupColumns,
      db.raw('? as value', [source.aggregate]),
    );
  const order = (table: string) => [`${table}.local_start`, ...names.map(() => `${table}.?? asc nulls last`)].join(', ');
  // The page first, then the ends of its windows, for its rows alone. The LIMIT of the second step keeps
  // it a subquery of its own, so that each end is worked out once per row rather than once per use below.
  const page = db
    .from(grouped.as('g'))
    .select('g.*', db.raw('count(*) over () as total'))
    .orderByRaw(order('g'), names)
    .limit(query.limit)
    .offset(query.offset);
  const windowed = db
    .from(page.as('p'))
    .select(
      'p.*',
      db.raw('? as window_from', [firstInstantAt(db, 'p.local_start', query.timeZone)]),
      db.raw('? as window_to', [firstInstantAt(db, `p.local_start + interval '1 ${query.windowSize}'`, query.timeZone)]),
    )
    .limit(query.limit);
  const rows = await db
    .from(windowed.as('w'))
    .select<Array<{ window_start: string; window_end: string; value: string | null; total: string } & Record<string, string | null>>>(
      db.raw(`${ISO_TEXT('w.window_from')} as window_start`),
      db.raw(`${ISO_TEXT('w.window_to')} as window_end`),
      ...names.map((name) => `w.${name}`),
      'w.value',
      'w.total',
    )
    .orderByRaw(order('w'), names);
  const total = rows[0] ? Number(rows[0].total) : query.offset > 0 ? await countWindows(db, grouped) : 0;
  return {
    rows: rows.map((row) => ({ windowStart: isoText(row.window_start), windowEnd: isoText(row.window_end), groups: names.map((name) => row[name] ?? null), value: row.value })),
    total,
  };
}

/**
 * The same rows from the meter's organisation-wide totals, where they answer: the whole organisation, no
 * customer split, at most one dimension and narrowing by that one alone, both ends given. A window holds
 * the quarter hours whose local period (`date_trunc` of their start, as the rollups are read) is the
 * window's, so that a window across a clock change holds the same quarters either way: one run of them,
 * or two where a clock goes back into the middle of a local hour or day. Each run's whole UTC days and
 * hours are read from the totals, the rest from the rollups. Null where they do not answer.
 */
async function windowsFromTotals(db: Knex, query: UsageWindowQuery): Promise<{ rows: UsageWindow[]; total: number } | null> {
  const [member] = query.members;
  const rollups = query.spec.rollups;
  const narrowed = Object.keys(query.narrowing ?? {});
  if (!rollups || query.spec.aggregation === 'unique_count' || query.members.length !== 1 || !member || member.customerEntityId !== null) return null;
  if (!member.from || !member.to || query.byCustomer || query.dimensions.length > 1 || !narrowed.every((key) => query.dimensions.includes(key))) return null;
  const key = query.dimensions[0];
  // Each quarter hour of the span with its local period; runs of quarters of one period (islands: the
  // quarter less its rank within the period is constant along a run) are a window's segments.
  const segments = await db.raw<{ rows: Array<{ local_start: string; from: Date; to: Date; window_start: Date; window_end: Date }> }>(
    `SELECT local_start::text, min(q) AS "from", max(q) + interval '15 minutes' AS "to",
            ? AS window_start, ? AS window_end
     FROM (
       SELECT q, local_start, q - (row_number() OVER (PARTITION BY local_start ORDER BY q)) * interval '15 minutes' AS island
       FROM (SELECT q, date_trunc('${query.windowSize}', q AT TIME ZONE ?) AS local_start FROM generate_series(?::timestamptz, ?::timestamptz - interval '15 minutes', interval '15 minutes') AS q) AS quarters
     ) AS runs
     GROUP BY local_start, island ORDER BY local_start, "from"`,
    [
      firstInstantAt(db, 'local_start', query.timeZone),
      firstInstantAt(db, `local_start + interval '1 ${query.windowSize}'`, query.timeZone),
      query.timeZone,
      sqlInstant(member.from),
      sqlInstant(member.to),
    ],
  );
  const windows: Array<{ windowStart: string; windowEnd: string }> = [];
  const indexOf = new Map<string, number>();
  for (const row of segments.rows) {
    if (!indexOf.has(row.local_start)) {
      indexOf.set(row.local_start, windows.length);
      windows.push({ windowStart: row.window_start.toISOString(), windowEnd: row.window_end.toISOString() });
    }
  }
  const read = await readTotals(db, {
    meterId: rollups.meterId,
    aggregation: query.spec.aggregation,
    dimension: key === undefined ? NO_DIMENSION : rollups.groupBy.indexOf(key),
    narrowing: key === undefined ? null : query.narrowing?.[key]?.map(dimensionValue) ?? null,
    segments: segments.rows.map((row) => ({ window: indexOf.get(row.local_start)!, from: row.from, to: row.to })),
    limit: query.limit,
    offset: query.offset,
  });
  if (!read) return null;
  return {
    rows: read.rows.map((row) => ({ ...windows[row.window]!, groups: key === undefined ? [] : [row.group], value: row.value })),
    total: read.total,
  };
}

/** The count of rows when the page asked lies past the last. */
async function countWindows(db: Knex, grouped: Knex.QueryBuilder): Promise<number> {
  const [row] = await db.from(grouped.as('w')).count<Array<{ count: string }>>({ count: '*' });
  return Number(row?.count ?? 0);
}
