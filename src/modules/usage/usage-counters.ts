import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { AppError } from '../../domain/errors';
import { formatExact, sumAmounts } from '../../domain/money';
import { addDays } from '../../domain/billing-periods';
import { ISO_DATE, LAST_DAY } from '../../domain/iso-dates';
import { dayIn, startOfDayIn, zoneAsRead } from '../../domain/zoned-days';
import { entitiesIn } from '../customers';
import { lockRollups, meterEvents, type RollupMeter } from './meter-rollups';
import { applyFilters, type MetadataFilter } from './usage-aggregates';

/**
 * Usage counters: one customer's usage of one meter, narrowed by filters of its own, per calendar day of a
 * time zone, so that a period of whole local days is the sum of its day rows. What reacts to usage as it
 * arrives (an entitlement's balance, an alert) counts with one; owners that count the same usage the same
 * way share it. Only meters that sum or count can be counted: a maximum or a latest value does not add up
 * over days.
 *
 * Ingestion adds a chunk's events to the counters in the statement that stores them (`counterAdditions`),
 * under the shared rollup lock, to the stripe of the day rows its caller names: chunks written at once take
 * stripes of their own and never wait for each other's row locks, and a day's usage is the sum of its
 * stripes. A counter made for usage already stored, an edit or deletion of events and a redefinition of the
 * meter fold days anew from raw events under the exclusive lock, into stripe 0.
 */

export interface CounterIdentity {
  customerId: string;
  meterId: string;
  filters: readonly MetadataFilter[];
  timeZone: string;
}

interface CounterRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  meter_id: string;
  filters: MetadataFilter[];
  time_zone: string;
}

/** One kind of counter of an organisation: those one statement adds to, whatever their customer. */
export interface CounterKind {
  meter_id: string;
  filters: MetadataFilter[];
  time_zone: string;
}

export const COUNTABLE = new Set(['sum', 'count']);

/** How many rows a counter's day may be kept in (the table's check allows 16); chunks name theirs modulo this. */
export const COUNTER_STRIPES = 8;

/** The kinds of counter the organisation keeps: none, the usual case, costs ingestion one small read. */
export async function counterKinds(trx: Knex, organisationId: string): Promise<CounterKind[]> {
  return trx('usage_counters').where({ organisation_id: organisationId }).distinct<CounterKind[]>('meter_id', 'filters', 'time_zone');
}

/** The day of the counter's zone an event counts on, in SQL; the zone bound under the name Postgres reads as the runtime does (`zoneAsRead`). */
const DAY_SQL = '(e."timestamp" AT TIME ZONE ?)::date';
const valueOf = (meter: RollupMeter) => (meter.aggregation === 'count' ? 'count(*)' : 'sum(e.value)');

/**
 * Inside a usage chunk's transaction (shared rollup lock held): per kind of counter whose meter counts a
 * metric among `metrics`, one INSERT … SELECT … ON CONFLICT DO UPDATE adding the events of `source` (the
 * chunk's inserted rows) to the day rows of their customers' counters in `stripe` (modulo
 * `COUNTER_STRIPES`), in key order. `customerOf` names each event entity's customer.
 */
export function counterAdditions(
  db: Knex,
  organisationId: string,
  meters: readonly RollupMeter[],
  kinds: readonly CounterKind[],
  metrics: ReadonlySet<string>,
  customerOf: ReadonlyMap<string, string>,
  source: string,
  stripe: number,
): Array<{ sql: string; bindings: readonly Knex.Value[] }> {
  const byId = new Map(meters.map((meter) => [meter.id, meter]));
  const entityIds = [...customerOf.keys()];
  const customerIds = entityIds.map((id) => customerOf.get(id)!);
  return kinds.flatMap((kind) => {
    const meter = byId.get(kind.meter_id);
    if (!meter || !metrics.has(meter.metric) || !COUNTABLE.has(meter.aggregation)) return [];
    const events = meterEvents(db, meter, source);
    applyFilters(db, events, kind.filters);
    const { sql, bindings } = events.toSQL();
    return [
      {
        sql: `INSERT INTO usage_counter_days (counter_id, day, stripe, value)
         SELECT c.id, ${DAY_SQL}, ?::smallint, ${valueOf(meter)}
         FROM (${sql}) AS e
         JOIN unnest(?::text[], ?::text[]) AS ec(entity_id, customer_id) ON ec.entity_id = e.customer_entity_id
         JOIN usage_counters c ON c.organisation_id = ? AND c.meter_id = ? AND c.time_zone = ? AND c.filters = ?::jsonb AND c.customer_id = ec.customer_id
         GROUP BY c.id, 2
         ORDER BY c.id, 2
         ON CONFLICT (counter_id, day, stripe) DO UPDATE SET value = usage_counter_days.value + excluded.value`,
        bindings: [zoneAsRead(kind.time_zone), stripe % COUNTER_STRIPES, ...bindings, entityIds, customerIds, organisationId, kind.meter_id, kind.time_zone, JSON.stringify(kind.filters)],
      },
    ];
  });
}

/**
 * The counter of this usage, made (and filled from the events already stored) if there is none, with one
 * more owner. Takes the exclusive rollup lock: no chunk adds to the counter while it is filled.
 */
export async function takeCounter(trx: Knex, organisationId: string, identity: CounterIdentity, meter: RollupMeter): Promise<string> {
  if (!COUNTABLE.has(meter.aggregation)) throw AppError.validation(`meter ${meter.id} takes the ${meter.aggregation} of its events; only a meter that sums or counts can be counted`, 'body.meterId');
  await lockRollups(trx, organisationId, 'exclusive');
  const identityOf = { organisation_id: organisationId, customer_id: identity.customerId, meter_id: identity.meterId, time_zone: identity.timeZone };
  const found = await trx<CounterRow>('usage_counters').where(identityOf).whereRaw('filters = ?::jsonb', [JSON.stringify(identity.filters)]).first();
  let id = found?.id;
  if (!id) {
    id = newId('uct');
    await trx('usage_counters').insert({ id, ...identityOf, filters: JSON.stringify(identity.filters) });
    await foldCounter(trx, { id, ...identityOf, filters: [...identity.filters] }, meter, null);
  }
  await trx('usage_counters').where({ id }).increment('owners', 1);
  return id;
}

/** One owner fewer; the counter is removed with its last. */
export async function releaseCounter(trx: Knex, counterId: string): Promise<void> {
  const [row] = await trx('usage_counters').where({ id: counterId }).decrement('owners', 1).returning<Array<{ owners: number }>>('owners');
  if (row && row.owners <= 0) await trx('usage_counters').where({ id: counterId }).delete();
}

/**
 * The counter's days (every day, when null) folded anew from the raw events of its customer's entities.
 * Under the exclusive rollup lock.
 */
async function foldCounter(trx: Knex, counter: CounterRow, meter: RollupMeter, days: readonly string[] | null): Promise<void> {
  const removed = trx('usage_counter_days').where('counter_id', counter.id);
  if (days !== null) removed.whereIn('day', [...days]);
  await removed.delete();
  if (days !== null && days.length === 0) return;
  if (!COUNTABLE.has(meter.aggregation)) return;
  const entityIds = await entitiesIn(trx).customerEntityIds(counter.organisation_id, counter.customer_id);
  if (entityIds.length === 0) return;
  const events = trx('usage_events')
    .where('usage_events.organisation_id', counter.organisation_id)
    .where('usage_events.metric', meter.metric)
    .whereIn('usage_events.customer_entity_id', entityIds)
    .select('usage_events.value', 'usage_events.timestamp');
  applyFilters(trx, events, [...meter.filters, ...counter.filters]);
  if (days !== null) {
    // One range of the (organisation, metric, entity, timestamp) index per day.
    events.where((any) => {
      for (const day of days) any.orWhere((range) => range.where('usage_events.timestamp', '>=', startOfDayIn(day, counter.time_zone)).where('usage_events.timestamp', '<', startOfDayIn(addDays(day, 1), counter.time_zone)));
    });
  }
  const { sql, bindings } = events.toSQL();
  await trx.raw(`INSERT INTO usage_counter_days (counter_id, day, value) SELECT ?, ${DAY_SQL}, ${valueOf(meter)} FROM (${sql}) AS e GROUP BY 2 ORDER BY 2`, [counter.id, zoneAsRead(counter.time_zone), ...bindings]);
}

/** Every counter of the meter folded anew: it was redefined. Under the exclusive rollup lock. */
export async function refoldCountersOfMeter(trx: Knex, meter: RollupMeter): Promise<void> {
  for (const counter of await trx<CounterRow>('usage_counters').where({ meter_id: meter.id })) await foldCounter(trx, counter, meter, null);
}

/** Whether anything counts the meter's usage with a counter. */
export async function meterIsCounted(trx: Knex, meterId: string): Promise<boolean> {
  return (await trx('usage_counters').where({ meter_id: meterId }).first(trx.raw('1 as one'))) !== undefined;
}

/**
 * After events were edited or deleted (under the exclusive rollup lock): the days they left or entered,
 * folded anew in every counter of their customers whose meter counts their metric.
 */
export async function refoldTouchedDays(
  trx: Knex,
  organisationId: string,
  meters: readonly RollupMeter[],
  touched: ReadonlyArray<{ metric: string; customer_entity_id: string; timestamp: Date }>,
): Promise<void> {
  if (touched.length === 0) return;
  const entityIds = [...new Set(touched.map((event) => event.customer_entity_id))];
  const customerOf = await entitiesIn(trx).customersOfEntities(organisationId, entityIds);
  const counters = await trx<CounterRow>('usage_counters').where({ organisation_id: organisationId }).whereIn('customer_id', [...new Set(customerOf.values())]);
  for (const counter of counters) {
    const meter = meters.find((candidate) => candidate.id === counter.meter_id);
    if (!meter) continue;
    const days = new Set(touched.filter((event) => event.metric === meter.metric && customerOf.get(event.customer_entity_id) === counter.customer_id).map((event) => dayIn(counter.time_zone, event.timestamp)));
    // A day at either end of the calendar (its next day, or the day itself, past the year 9999 or before
    // the year 1 where the zone reads it) has no ends to fold it by: the whole counter is folded anew.
    const bounded = [...days].every((day) => ISO_DATE.test(day) && day > '0001-01-01' && day < LAST_DAY);
    if (days.size > 0) await foldCounter(trx, counter, meter, bounded ? [...days].sort() : null);
  }
}

/** Asked of `counterSums`: a counter's days from `fromDay` to before `toDay`, under a key. */
export interface CounterSpan {
  key: string;
  counterId: string;
  fromDay: string;
  toDay: string;
}

/**
 * A counter's days from a day on (each the sum of its stripes), for a statement that reads them beside what
 * the counter serves: a JSON array of `[day, value]` (the value as text, to keep every digit), by day.
 * `counterIdColumn` names the outer statement's column holding the counter's id; `fromDay` is an SQL date
 * expression.
 */
export function counterDaysSince(db: Knex, counterIdColumn: string, fromDay: Knex.Raw): Knex.Raw {
  return db.raw(
    `(SELECT coalesce(json_agg(json_build_array(to_char(d.day, 'YYYY-MM-DD'), d.value::text) ORDER BY d.day), '[]'::json)
      FROM (SELECT day, sum(value) AS value FROM usage_counter_days WHERE counter_id = ?? AND day >= ? GROUP BY day) AS d)`,
    [counterIdColumn, fromDay],
  );
}

/** A counter's day rows as `counterDaysSince` reads them: `[day, value]`. */
export type CounterDay = [day: string, value: string];

/**
 * The sum of each span's day rows (0 where none), from day rows already read (`counterDaysSince`); every
 * span must be of the counter the days are of, and start no earlier than the first day read.
 */
export function sumCounterDays(days: readonly CounterDay[], spans: readonly CounterSpan[]): Map<string, string> {
  return new Map(
    spans.map((span) => [span.key, formatExact(sumAmounts(days.filter(([day]) => day >= span.fromDay && day < span.toDay).map(([, value]) => value)))]),
  );
}

/** The sum of each span's day rows, every stripe (0 where none), in one statement. */
export async function counterSums(db: Knex, spans: readonly CounterSpan[]): Promise<Map<string, string>> {
  if (spans.length === 0) return new Map();
  const result = await db.raw<{ rows: Array<{ key: string; value: string }> }>(
    `SELECT s.key, coalesce(sum(d.value), 0)::text AS value
     FROM unnest(?::text[], ?::text[], ?::date[], ?::date[]) AS s(key, counter_id, from_day, to_day)
     LEFT JOIN usage_counter_days d ON d.counter_id = s.counter_id AND d.day >= s.from_day AND d.day < s.to_day
     GROUP BY s.key`,
    [spans.map((span) => span.key), spans.map((span) => span.counterId), spans.map((span) => span.fromDay), spans.map((span) => span.toDay)],
  );
  return new Map(result.rows.map((row) => [row.key, row.value]));
}
