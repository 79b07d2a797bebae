import type { Knex } from 'knex';
import type { Aggregation } from './usage.repository';

/** How a meter folds events: the aggregation, and for unique_count the metadata field counted. */
export interface AggregationSpec {
  aggregation: Aggregation;
  uniqueField: string | null;
}

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
}

/** A group's aggregate, and its period when asked by period. */
export interface UsageGroup {
  key: string;
  period: string | null;
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

/**
 * The one way usage is aggregated, for billing and for reading alike: every window of the query is read in
 * one statement, joined to the events of the metric, and folded per group (and per period when asked). A
 * group with no event is absent. Where every window names its entity and both ends, the join is on the
 * (organisation, metric, entity, timestamp) index's columns alone; an open end or every entity widens it.
 */
export async function aggregateUsage(db: Knex, query: UsageQuery): Promise<UsageGroup[]> {
  if (query.members.length === 0) return [];
  const { members } = query;
  const anyEntity = members.some((member) => member.customerEntityId === null);
  const openFrom = members.some((member) => member.from === null);
  const openTo = members.some((member) => member.to === null);
  const period = query.byPeriod ? db.raw(`to_char(date_trunc('${query.byPeriod}', "timestamp" at time zone ?), 'YYYY-MM-DD')`, [query.timeZone ?? 'UTC']) : null;
  const rows = await db('usage_events')
    .join(
      db.raw('unnest(?::text[], ?::text[], ?::timestamptz[], ?::timestamptz[]) as member(entity_id, group_key, window_from, window_to)', [
        members.map((member) => member.customerEntityId) as Knex.Value,
        members.map((member) => member.key),
        members.map((member) => member.from?.toISOString() ?? null) as Knex.Value,
        members.map((member) => member.to?.toISOString() ?? null) as Knex.Value,
      ]),
      (join) => {
        if (anyEntity) join.on((on) => on.onNull('member.entity_id').orOn('member.entity_id', 'usage_events.customer_entity_id'));
        else join.on('member.entity_id', 'usage_events.customer_entity_id');
        if (openFrom) join.andOn((on) => on.onNull('member.window_from').orOn('usage_events.timestamp', '>=', 'member.window_from'));
        else join.andOn('usage_events.timestamp', '>=', 'member.window_from');
        if (openTo) join.andOn((on) => on.onNull('member.window_to').orOn('usage_events.timestamp', '<', 'member.window_to'));
        else join.andOn('usage_events.timestamp', '<', 'member.window_to');
      },
    )
    .where({ 'usage_events.organisation_id': query.organisationId, 'usage_events.metric': query.metric })
    .groupBy(period ? ['member.group_key', 'period'] : ['member.group_key'])
    .orderBy(period ? ['member.group_key', 'period'] : ['member.group_key'])
    .select<Array<{ group_key: string; period?: string; value: string | null }>>(
      'member.group_key',
      ...(period ? [db.raw('? as period', [period])] : []),
      db.raw('? as value', [aggregateExpression(db, query.spec)]),
    );
  return rows.map((row) => ({ key: row.group_key, period: row.period ?? null, value: row.value }));
}
