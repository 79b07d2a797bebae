import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { Aggregation, AggregationSpec, MetadataFilter, RollupMeter } from '../usage';

export type { Aggregation, MetadataFilter };

/** How far a meter's rollups are filled: pending and running read raw events, as does failed. */
export type BackfillStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface MeterRow {
  id: string;
  organisation_id: string;
  name: string;
  metric: string;
  aggregation: Aggregation;
  unique_field: string | null;
  group_by: string[];
  filters: MetadataFilter[];
  backfill_status: BackfillStatus;
  /** bigint, as text. */
  backfill_events_read: string;
  backfill_cursor: Date | null;
  backfill_generation: number;
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
  /** How far the meter's rollups are filled from the events stored before it was defined as it is. */
  backfill: { status: BackfillStatus; eventsRead: number };
  createdAt: string;
  updatedAt: string;
}

/** A filter with its fields in one order, whatever order its stored JSON keeps them in. */
export const filterOf = (filter: MetadataFilter): MetadataFilter =>
  filter.operator === 'in' || filter.operator === 'not_in' ? { key: filter.key, operator: filter.operator, values: filter.values } : { key: filter.key, operator: filter.operator };

/**
 * What a meter's filters select, written one way: every filter must hold, so their order says nothing, nor
 * does the order (or a repeat) of an `in` or `not_in` list's values.
 */
export function filterSet(filters: readonly MetadataFilter[]): string[] {
  const written = filters.map(filterOf).map((filter) => JSON.stringify('values' in filter ? { ...filter, values: [...new Set(filter.values)].sort() } : filter));
  return [...new Set(written)].sort();
}

export function toMeter(row: MeterRow): Meter {
  return {
    id: row.id,
    name: row.name,
    metric: row.metric,
    aggregation: row.aggregation,
    uniqueField: row.unique_field,
    groupBy: row.group_by,
    filters: row.filters.map(filterOf),
    backfill: { status: row.backfill_status, eventsRead: Number(row.backfill_events_read) },
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
    async create(organisationId: string, meter: MeterInput, backfill: BackfillStatus): Promise<MeterRow> {
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
          backfill_status: backfill,
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

    /**
     * The meter's rollups start over: a new generation, nothing read, `pending` (or `completed` when there
     * is nothing to fill).
     */
    async restartBackfill(organisationId: string, id: string, status: 'pending' | 'completed'): Promise<MeterRow | undefined> {
      const [row] = await db('meters')
        .where({ organisation_id: organisationId, id })
        .update({ backfill_status: status, backfill_events_read: 0, backfill_cursor: null, backfill_generation: db.raw('backfill_generation + 1') })
        .returning<MeterRow[]>('*');
      return row;
    },

    /** A slice filled: `read` more events read, the cursor moved on, the status as given. */
    async recordBackfill(id: string, generation: number, progress: { read: number; cursor: Date | null; status: BackfillStatus }): Promise<void> {
      await db('meters')
        .where({ id, backfill_generation: generation })
        .update({ backfill_status: progress.status, backfill_events_read: db.raw('backfill_events_read + ?', [progress.read]), backfill_cursor: progress.cursor });
    },

    /** Inside a transaction: the meter, its row locked until commit. */
    async lockById(organisationId: string, id: string): Promise<MeterRow | undefined> {
      return db<MeterRow>('meters').where({ organisation_id: organisationId, id }).forUpdate().first();
    },

    /** Every meter of the organisation, as its rollups are kept by. */
    async rollupMeters(organisationId: string): Promise<RollupMeter[]> {
      const rows = await db<MeterRow>('meters').where({ organisation_id: organisationId }).select('id', 'metric', 'aggregation', 'group_by', 'filters');
      return rows.map(rollupMeterOf);
    },

    async findById(organisationId: string, id: string): Promise<MeterRow | undefined> {
      return db<MeterRow>('meters').where({ organisation_id: organisationId, id }).first();
    },

    /**
     * The meters; `share` locks them against a change of definition until the transaction ends (what rates
     * their usage takes it, so that a meter is never redefined between its check for charges and a charge).
     */
    async findMany(organisationId: string, ids: string[], lock?: 'share'): Promise<MeterRow[]> {
      if (ids.length === 0) return [];
      const query = db<MeterRow>('meters').where({ organisation_id: organisationId }).whereIn('id', ids).orderBy('id');
      return lock === 'share' ? query.forShare() : query;
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Meter>> {
      return paginate<MeterRow, Meter>(db('meters').where({ organisation_id: organisationId }).select('*'), paging, {
        searchColumns: ['name', 'metric'],
        map: toMeter,
      });
    },
  };
}

/** The meter as its rollups are kept by. */
export const rollupMeterOf = (meter: Pick<MeterRow, 'id' | 'metric' | 'aggregation' | 'group_by' | 'filters'>): RollupMeter => ({
  id: meter.id,
  metric: meter.metric,
  aggregation: meter.aggregation,
  groupBy: meter.group_by,
  filters: meter.filters,
});

/**
 * How the meter folds its metric's events, which of them count, and its rollups, which are read instead of
 * the raw events once they are filled.
 */
export const specOf = (meter: MeterRow): AggregationSpec => ({
  aggregation: meter.aggregation,
  uniqueField: meter.unique_field,
  filters: meter.filters,
  rollups: { meterId: meter.id, groupBy: meter.group_by, complete: meter.backfill_status === 'completed' },
});
