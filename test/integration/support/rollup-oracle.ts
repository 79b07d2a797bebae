import type { Knex } from 'knex';
import { aggregateUsage, type Aggregation } from '../../../src/modules/usage';

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
 * sum, count, max and latest. Equal lists mean the rollups hold exactly the raw events.
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
  const order = (rows: RollupRow[]) => rows.map((row) => JSON.stringify(row)).sort();
  return { stored: order(stored).map((row) => JSON.parse(row)), expected: order(expected).map((row) => JSON.parse(row)) };
}
