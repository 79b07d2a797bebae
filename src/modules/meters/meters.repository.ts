import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type Aggregation = 'sum' | 'count' | 'max' | 'unique_count' | 'latest';

export interface MeterRow {
  id: string;
  organisation_id: string;
  name: string;
  metric: string;
  aggregation: Aggregation;
  unique_field: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Meter {
  id: string;
  name: string;
  metric: string;
  aggregation: Aggregation;
  uniqueField: string | null;
  createdAt: string;
  updatedAt: string;
}

export function toMeter(row: MeterRow): Meter {
  return {
    id: row.id,
    name: row.name,
    metric: row.metric,
    aggregation: row.aggregation,
    uniqueField: row.unique_field,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** One SQL expression per aggregation, all served by the (organisation, metric, entity, timestamp) index. */
function aggregateExpression(db: Knex, meter: MeterRow): Knex.Raw {
  switch (meter.aggregation) {
    case 'sum':
      return db.raw('coalesce(sum(value), 0)::text');
    case 'count':
      return db.raw('count(*)::text');
    case 'max':
      return db.raw('max(value)::text');
    case 'unique_count':
      return db.raw('count(distinct metadata ->> ?)::text', [meter.unique_field]);
    case 'latest':
      return db.raw('(array_agg(value order by "timestamp" desc, created_at desc, id desc))[1]::text');
  }
}

export interface UsageWindow {
  customerEntityId?: string;
  /** All of a customer's entities, for billing. */
  customerEntityIds?: string[];
  from?: Date;
  to?: Date;
}

export function createMeterRepository(db: Knex) {
  return {
    async create(organisationId: string, meter: { name: string; metric: string; aggregation: Aggregation; uniqueField?: string }): Promise<MeterRow> {
      const [row] = await db<MeterRow>('meters')
        .insert({
          id: newId('mtr'),
          organisation_id: organisationId,
          name: meter.name,
          metric: meter.metric,
          aggregation: meter.aggregation,
          unique_field: meter.uniqueField ?? null,
        })
        .returning('*');
      return row!;
    },

    async update(organisationId: string, id: string, changes: Partial<Pick<MeterRow, 'name' | 'metric' | 'aggregation' | 'unique_field'>>): Promise<MeterRow | undefined> {
      const [row] = await db('meters')
        .where({ organisation_id: organisationId, id })
        .update({ ...changes, updated_at: db.fn.now() })
        .returning<MeterRow[]>('*');
      return row;
    },

    async findById(organisationId: string, id: string): Promise<MeterRow | undefined> {
      return db<MeterRow>('meters').where({ organisation_id: organisationId, id }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Meter>> {
      return paginate<MeterRow, Meter>(db('meters').where({ organisation_id: organisationId }).select('*'), paging, {
        searchColumns: ['name', 'metric'],
        map: toMeter,
      });
    },

    async aggregate(meter: MeterRow, window: UsageWindow, groupBy?: 'day' | 'month'): Promise<{ value: string | null; groups: Array<{ period: string; value: string | null }> }> {
      const base = db('usage_events').where({ organisation_id: meter.organisation_id, metric: meter.metric });
      if (window.customerEntityId) base.where('customer_entity_id', window.customerEntityId);
      if (window.customerEntityIds) base.whereIn('customer_entity_id', window.customerEntityIds);
      if (window.from) base.where('timestamp', '>=', window.from);
      if (window.to) base.where('timestamp', '<', window.to);
      const expression = aggregateExpression(db, meter);
      const total = await base.clone().first<{ value: string | null }>(db.raw('? as value', [expression]));
      if (!groupBy) return { value: total?.value ?? null, groups: [] };
      // Periods are UTC calendar days or months, named by their first day.
      const period = db.raw(`to_char(date_trunc('${groupBy}', "timestamp" at time zone 'UTC'), 'YYYY-MM-DD')`);
      const groups = await base
        .clone()
        .select<Array<{ period: string; value: string | null }>>(db.raw('? as period', [period]), db.raw('? as value', [expression]))
        .groupByRaw('1')
        .orderByRaw('1');
      return { value: total?.value ?? null, groups };
    },
  };
}
