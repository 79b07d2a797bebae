import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { Aggregation, AggregationSpec, MetadataFilter } from '../usage';

export type { Aggregation, MetadataFilter };

export interface MeterRow {
  id: string;
  organisation_id: string;
  name: string;
  metric: string;
  aggregation: Aggregation;
  unique_field: string | null;
  group_by: string[];
  filters: MetadataFilter[];
  created_at: Date;
  updated_at: Date;
}

export interface Meter {
  id: string;
  name: string;
  metric: string;
  aggregation: Aggregation;
  uniqueField: string | null;
  groupBy: string[];
  filters: MetadataFilter[];
  createdAt: string;
  updatedAt: string;
}

/** A filter with its fields in one order, whatever order its stored JSON keeps them in. */
export const filterOf = (filter: MetadataFilter): MetadataFilter =>
  filter.operator === 'in' || filter.operator === 'not_in' ? { key: filter.key, operator: filter.operator, values: filter.values } : { key: filter.key, operator: filter.operator };

export function toMeter(row: MeterRow): Meter {
  return {
    id: row.id,
    name: row.name,
    metric: row.metric,
    aggregation: row.aggregation,
    uniqueField: row.unique_field,
    groupBy: row.group_by,
    filters: row.filters.map(filterOf),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export interface MeterInput {
  name: string;
  metric: string;
  aggregation: Aggregation;
  uniqueField?: string;
  groupBy?: string[];
  filters?: MetadataFilter[];
}

/** Meters. `db` may be a transaction. */
export function createMeterRepository(db: Knex) {
  return {
    async create(organisationId: string, meter: MeterInput): Promise<MeterRow> {
      const [row] = await db('meters')
        .insert({
          id: newId('mtr'),
          organisation_id: organisationId,
          name: meter.name,
          metric: meter.metric,
          aggregation: meter.aggregation,
          unique_field: meter.uniqueField ?? null,
          group_by: JSON.stringify(meter.groupBy ?? []),
          filters: JSON.stringify(meter.filters ?? []),
        })
        .returning<MeterRow[]>('*');
      return row!;
    },

    async update(organisationId: string, id: string, changes: Partial<Pick<MeterRow, 'name' | 'metric' | 'aggregation' | 'unique_field' | 'group_by' | 'filters'>>): Promise<MeterRow | undefined> {
      const { group_by, filters, ...rest } = changes;
      const [row] = await db('meters')
        .where({ organisation_id: organisationId, id })
        .update({
          ...rest,
          ...(group_by === undefined ? {} : { group_by: JSON.stringify(group_by) }),
          ...(filters === undefined ? {} : { filters: JSON.stringify(filters) }),
          updated_at: db.fn.now(),
        })
        .returning<MeterRow[]>('*');
      return row;
    },

    async findById(organisationId: string, id: string): Promise<MeterRow | undefined> {
      return db<MeterRow>('meters').where({ organisation_id: organisationId, id }).first();
    },

    async findMany(organisationId: string, ids: string[]): Promise<MeterRow[]> {
      if (ids.length === 0) return [];
      return db<MeterRow>('meters').where({ organisation_id: organisationId }).whereIn('id', ids);
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Meter>> {
      return paginate<MeterRow, Meter>(db('meters').where({ organisation_id: organisationId }).select('*'), paging, {
        searchColumns: ['name', 'metric'],
        map: toMeter,
      });
    },
  };
}

/** How the meter folds its metric's events, and which of them count. */
export const specOf = (meter: MeterRow): AggregationSpec => ({ aggregation: meter.aggregation, uniqueField: meter.unique_field, filters: meter.filters });
