import type { Knex } from 'knex';
import { aggregateUsage, foldPendingTotals, lockRollups, type Aggregation, type MetadataFilter } from '../../../src/modules/usage';

export interface RollupRow {
  entity: string;
  bucket: string;
  groups: Array<string | null>;
  sum: string;
  count: string;
  max: string;
  latest: string;
}

/**
 * A meter's rollup table as stored, and as the raw events fold through the raw aggregation path: one
 * window per (entity, 15-minute bucket) that either side names, split by the meter's groupBy keys, each of
 * sum, count, max and latest. Then its organisation-wide totals the same way: one window per UTC hour and
 * day, whole and split by each groupBy key (rows named `total:<grain>:<dimension>` in place of an entity),
 * once the chunks pending for them are folded.
 * Equal lists mean the rollups and totals hold exactly the raw events.
 */
export async function rollupsAgainstEvents(db: Knex, meterId: string): Promise<{ stored: RollupRow[]; expected: RollupRow[] }> {
  const meter = await db('meters').where({ id: meterId }).first();
  const stored = (
    await db.raw(
      `SELECT customer_entity_id AS entity, bucket_start AS bucket, group_values AS groups, sum::text, count::text, max::text, latest_value::text AS latest
       FROM meter_rollups WHERE meter_id = ?`,
      [meterId],
    )
  ).rows.map((row: { bucket: Date } & Omit<RollupRow, 'bucket'>) => ({ ...row, bucket: row.bucket.toISOString() }));
  const pairs = (
    await db.raw(
      `SELECT DISTINCT customer_entity_id AS entity, date_bin('15 minutes', "timestamp", timestamptz '2000-01-01Z') AS bucket FROM usage_events WHERE organisation_id = ? AND metric = ?
       UNION SELECT customer_entity_id, bucket_start FROM meter_rollups WHERE meter_id = ?`,
      [meter.organisation_id, meter.metric, meterId],
    )
  ).rows as Array<{ entity: string; bucket: Date }>;
  const members = pairs.map((pair) => ({ key: `${pair.entity}|${pair.bucket.toISOString()}`, customerEntityId: pair.entity, from: pair.bucket, to: new Date(pair.bucket.getTime() + 15 * 60_000) }));
  const fold = async (aggregation: Aggregation) =>
    new Map(
      (await aggregateUsage(db, { organisationId: meter.organisation_id, metric: meter.metric, spec: { aggregation, uniqueField: null, filters: meter.filters }, members, dimensions: meter.group_by })).map((group) => [
        JSON.stringify([group.key, group.dimensions]),
        group,
      ]),
    );
  const [sums, counts, maxima, latest] = await Promise.all((['sum', 'count', 'max', 'latest'] as const).map(fold));
  const expected = [...sums!.entries()].map(([key, group]) => {
    const [entity, bucket] = group.key.split('|') as [string, string];
    return { entity, bucket, groups: group.dimensions, sum: group.value!, count: counts!.get(key)!.value!, max: maxima!.get(key)!.value!, latest: latest!.get(key)!.value! };
  });
  const totals = await totalsAgainstEvents(db, meter);
  const order = (rows: RollupRow[]) => rows.map((row) => JSON.stringify(row)).sort();
  return { stored: order([...stored, ...totals.stored]).map((row) => JSON.parse(row)), expected: order([...expected, ...totals.expected]).map((row) => JSON.parse(row)) };
}

/**
 * The chunks pending for the meter's totals folded in, as the worker folds them (waiting out a fold the worker
 * is running): the totals then hold every event.
 */
async function foldPending(db: Knex, meter: { id: string; organisation_id: string; metric: string; aggregation: Aggregation; filters: MetadataFilter[]; group_by: string[] }): Promise<void> {
  const rollupMeter = { id: meter.id, metric: meter.metric, aggregation: meter.aggregation, groupBy: meter.group_by, filters: meter.filters };
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const folded = await db.transaction(async (trx) => {
      await lockRollups(trx, meter.organisation_id, 'shared');
      return foldPendingTotals(trx, meter.organisation_id, [rollupMeter]);
    });
    if (folded !== false && !folded.more) return;
    if (folded === false) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the totals of meter ${meter.id} were not folded in 50 rounds`);
}

async function totalsAgainstEvents(db: Knex, meter: { id: string; organisation_id: string; metric: string; aggregation: Aggregation; filters: MetadataFilter[]; group_by: string[] }): Promise<{ stored: RollupRow[]; expected: RollupRow[] }> {
  await foldPending(db, meter);
  const stored = (
    await db.raw(
      `SELECT 'total:' || grain || ':' || dimension AS entity, bucket_start AS bucket, group_value AS groups, sum::text, count::text, max::text, latest_value::text AS latest
       FROM meter_rollup_totals WHERE meter_id = ?`,
      [meter.id],
    )
  ).rows.map((row: { bucket: Date } & Omit<RollupRow, 'bucket'>) => ({ ...row, bucket: row.bucket.toISOString() }));
  const expected: RollupRow[] = [];
  for (const grain of ['hour', 'day'] as const) {
    const periods = (
      await db.raw(
        `SELECT DISTINCT date_trunc(?, "timestamp" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS period FROM usage_events WHERE organisation_id = ? AND metric = ?`,
        [grain, meter.organisation_id, meter.metric],
      )
    ).rows as Array<{ period: Date }>;
    const width = grain === 'hour' ? 3_600_000 : 86_400_000;
    const members = periods.map(({ period }) => ({ key: period.toISOString(), customerEntityId: null, from: period, to: new Date(period.getTime() + width) }));
    for (let dimension = -1; dimension < meter.group_by.length; dimension += 1) {
      const dimensions = dimension < 0 ? [] : [meter.group_by[dimension]!];
      const fold = async (aggregation: Aggregation) =>
        new Map(
          (await aggregateUsage(db, { organisationId: meter.organisation_id, metric: meter.metric, spec: { aggregation, uniqueField: null, filters: meter.filters }, members, dimensions })).map((group) => [
            JSON.stringify([group.key, group.dimensions]),
            group,
          ]),
        );
      const [sums, counts, maxima, latest] = await Promise.all((['sum', 'count', 'max', 'latest'] as const).map(fold));
      for (const [key, group] of sums!) {
        expected.push({ entity: `total:${grain}:${dimension}`, bucket: group.key, groups: group.dimensions, sum: group.value!, count: counts!.get(key)!.value!, max: maxima!.get(key)!.value!, latest: latest!.get(key)!.value! });
      }
    }
  }
  return { stored, expected };
}
