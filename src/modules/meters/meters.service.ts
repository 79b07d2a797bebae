import type { Knex } from 'knex';
import { getOrganisationSettings, zoneOf } from '../organisation-settings';
import { customersIn, entitiesIn } from '../customers';
import { formatExactOrNull } from '../../domain/money';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import { dimensionalProblems, type DimensionalTerms } from '../../domain/dimensional-prices';
import type { Page, PageQuery } from '../../http/paging';
import { aggregateUsage, aggregateUsageWindows, COUNTABLE, dropRollups, emptyAggregate, lockRollups, meterIsCounted, nextEventAt, refoldCountersOfMeter, type MetadataFilter, type UsageMember, type WindowSize } from '../usage';
import { checkQueryFilters, checkSpan, CUSTOMER_GROUP, groupsOf } from './meter-dimensions';
import { createMeterRepository, filterSet, rollupMeterOf, specOf, toMeter, type Aggregation, type Meter, type MeterInput, type MeterRow } from './meters.repository';

const duplicateName = (error: unknown): never => {
  if (isUniqueViolation(error)) throw AppError.conflict('A meter with this name exists', 'body.name');
  throw error;
};

export interface MeterUsageQuery {
  customerEntityId?: string;
  /** ISO date-times: from inclusive, to exclusive. */
  from?: string;
  to?: string;
  groupBy?: 'day' | 'month';
}

export interface MeterWindowQuery {
  /** ISO date-times: from inclusive, to exclusive. */
  from: string;
  to: string;
  windowSize: WindowSize;
  groupBy?: string | string[];
  customerId?: string;
  entityId?: string;
  timezone?: string;
  page: number;
  limit: number;
  /** Values each named dimension must take. */
  filter: Record<string, string[]>;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What other modules hold against a meter's definition, read inside the transaction that changes it. */
export interface MeterUses {
  /** Whether anything was ever charged for usage of the meter. */
  billed(trx: Knex, organisationId: string, meterId: string): Promise<boolean>;
  /** The plan items that price or split the meter's usage by dimension value, with those terms. */
  dimensionalItems(trx: Knex, organisationId: string, meterId: string): Promise<Array<{ id: string; planId: string } & DimensionalTerms>>;
}

/**
 * Starts the backfill workflow of a meter's definition (its generation), after the meter committed; a
 * second start of the same definition joins the first.
 */
export type StartBackfill = (meter: MeterRow) => Promise<void>;

export function createMeterService(db: Knex, uses: MeterUses, startBackfill?: StartBackfill) {
  const meters = createMeterRepository(db);

  /** Whether the organisation holds events of the metric: whether a meter of it has anything to fill. */
  const hasEvents = async (trx: Knex, organisationId: string, metric: string) => (await nextEventAt(trx, organisationId, metric, null)) !== null;

  /**
   * The fill of a pending or running meter started, or joined when it runs; the meter reads raw events,
   * exact, until it completes. With Temporal away the meter stays as it is (it committed already), and the
   * next read of it starts the fill; a fill whose workflow ended without finishing (terminated) resumes
   * from the progress stored on the meter.
   */
  async function started(row: MeterRow): Promise<MeterRow> {
    if ((row.backfill_status !== 'pending' && row.backfill_status !== 'running') || !startBackfill) return row;
    try {
      await startBackfill(row);
    } catch (error) {
      if (!(error instanceof AppError && error.kind === 'unavailable')) throw error;
    }
    return row;
  }

  async function findRow(organisationId: string, id: string): Promise<MeterRow> {
    return orNotFound(await meters.findById(organisationId, id), 'Meter');
  }

  return {
    /**
     * A meter of a metric that has events fills its rollups from them (a backfill workflow, started after
     * the meter commits); one without is complete at once. The exclusive rollup lock orders the meter with
     * the chunks being ingested: a chunk that commits before it is among the events the backfill reads, one
     * after it sees the meter and adds to its rollups.
     */
    async create(organisationId: string, meter: MeterInput): Promise<Meter> {
      const row = await db
        .transaction(async (trx) => {
          await lockRollups(trx, organisationId, 'exclusive');
          return createMeterRepository(trx).create(organisationId, meter, (await hasEvents(trx, organisationId, meter.metric)) ? 'pending' : 'completed');
        })
        .catch(duplicateName);
      return toMeter(await started(row));
    },

    /** unique_count needs its field, whether it is given now or kept from before. */
    async update(
      organisationId: string,
      id: string,
      changes: { name?: string; metric?: string; aggregation?: Aggregation; uniqueField?: string | null; groupBy?: string[]; filters?: MetadataFilter[] },
    ): Promise<Meter> {
      // A change of metric, filters or groupBy replaces the rollups: the organisation's rollup lock first
      // (as backfill slices take it before they record progress on the meter), then the meter's row, so that
      // the checks below and the change see the same charges and plan items.
      // An aggregation changes what the meter's usage counters hold, so it takes the lock too.
      const mayRefill = changes.metric !== undefined || changes.groupBy !== undefined || changes.filters !== undefined || changes.aggregation !== undefined;
      const { current, row: updated } = await db
        .transaction(async (trx) => {
          const repository = createMeterRepository(trx);
          if (mayRefill) await lockRollups(trx, organisationId, 'exclusive');
          const current = orNotFound(await repository.lockById(organisationId, id), 'Meter');
          const next = { name: changes.name, metric: changes.metric, aggregation: changes.aggregation, unique_field: changes.uniqueField, group_by: changes.groupBy, filters: changes.filters };
          const regroups = changes.groupBy !== undefined && !sameJson(changes.groupBy, current.group_by);
          const refilters = changes.filters !== undefined && !sameJson(filterSet(changes.filters), filterSet(current.filters));
          // Which events a billed meter counted, how it aggregates them and how its usage splits stay as
          // billed: runs rate every charged window again, so a change would correct invoices already out.
          // Rating locks the meter for share while it charges, so no charge lands between this check and the change.
          const remetrics = changes.metric !== undefined && changes.metric !== current.metric;
          const reaggregates = changes.aggregation !== undefined && changes.aggregation !== current.aggregation;
          // A unique count's field is what it counts distinct values of.
          const recounted = changes.uniqueField !== undefined && changes.uniqueField !== current.unique_field && (changes.aggregation ?? current.aggregation) === 'unique_count';
          if ((regroups || refilters || remetrics || reaggregates || recounted) && (await uses.billed(trx, organisationId, id))) {
            throw AppError.conflict('The meter has been billed: its metric, aggregation, uniqueField, filters and groupBy can no longer change; create a new meter instead');
          }
          if ((next.aggregation ?? current.aggregation) === 'unique_count' && !(next.unique_field === undefined ? current.unique_field : next.unique_field)) {
            throw AppError.validation('uniqueField is required for unique_count', 'body.uniqueField');
          }
          // Plan items priced or split by the meter's dimensions must still fit it as it is to be.
          if (regroups || (changes.aggregation !== undefined && changes.aggregation !== current.aggregation)) {
            const definition = { groupBy: changes.groupBy ?? current.group_by, aggregation: changes.aggregation ?? current.aggregation };
            for (const item of await uses.dimensionalItems(trx, organisationId, id)) {
              const [problem] = dimensionalProblems(item, definition);
              if (problem) throw AppError.conflict(`Plan item ${item.id} of billing plan ${item.planId} prices this meter's usage by dimension value, and would no longer fit it: ${problem.path}: ${problem.message}`);
            }
          }
          // Rollups are kept by the metric, the filters and the groupBy keys: a change of any fills them anew.
          const refills = (changes.metric !== undefined && changes.metric !== current.metric) || regroups || refilters;
          // Usage counters (of entitlements, alerts) are folded anew from raw events by the meter as it is to be.
          const recounts = (refills || (changes.aggregation !== undefined && changes.aggregation !== current.aggregation)) && (await meterIsCounted(trx, id));
          if (recounts && !COUNTABLE.has(changes.aggregation ?? current.aggregation)) {
            throw AppError.conflict("Features or usage alerts keep counters of this meter's usage: its aggregation must stay sum or count");
          }
          const recount = async (row: MeterRow | undefined) => {
            if (recounts && row) await refoldCountersOfMeter(trx, rollupMeterOf(row));
            return row;
          };
          if (!refills) return { current, row: await recount(await repository.update(organisationId, id, next)) };
          const row = await recount(await repository.update(organisationId, id, next));
          if (!row) return { current, row };
          await dropRollups(trx, id);
          return { current, row: await repository.restartBackfill(organisationId, id, (await hasEvents(trx, organisationId, row.metric)) ? 'pending' : 'completed') };
        })
        .catch(duplicateName);
      return toMeter(updated ? await started(updated) : current);
    },


    async list(organisationId: string, paging: PageQuery): Promise<Page<Meter>> {
      return meters.list(organisationId, paging);
    },

    /**
     * A meter still `pending` (one that existed before rollups, or whose fill did not reach Temporal) or
     * `running` has its fill started by this read, or joined when it runs: never started twice.
     */
    async get(organisationId: string, id: string): Promise<Meter> {
      return toMeter(await started(await findRow(organisationId, id)));
    },

    /** The metric events take when they are ingested for this meter. */
    async metricOf(organisationId: string, id: string): Promise<string> {
      return (await findRow(organisationId, id)).metric;
    },

    async usage(organisationId: string, id: string, query: MeterUsageQuery) {
      const meter = await findRow(organisationId, id);
      // An entity deleted since still has its usage to read; one the organisation never had is not found.
      if (query.customerEntityId !== undefined && !(await entitiesIn(db).customersOfEntities(organisationId, [query.customerEntityId])).has(query.customerEntityId)) {
        throw AppError.notFound('Entity', 'query.customerEntityId');
      }
      const window = { key: 'window', customerEntityId: query.customerEntityId ?? null, from: query.from ? new Date(query.from) : null, to: query.to ? new Date(query.to) : null };
      const usage = { organisationId, metric: meter.metric, spec: specOf(meter), members: [window] };
      const [total] = await aggregateUsage(db, usage);
      const groups = query.groupBy ? await aggregateUsage(db, { ...usage, byPeriod: query.groupBy, timeZone: (await getOrganisationSettings(db, organisationId)).timezone }) : [];
      const result = { value: formatExactOrNull(total?.value ?? emptyAggregate(usage.spec)), groups: groups.map((group) => ({ period: group.period!, value: formatExactOrNull(group.value) })) };
      return {
        meterId: meter.id,
        aggregation: meter.aggregation,
        customerEntityId: query.customerEntityId ?? null,
        from: query.from ?? null,
        to: query.to ?? null,
        ...result,
      };
    },

    /** The meter's usage per window and group, a page of rows at a time. */
    async query(organisationId: string, id: string, query: MeterWindowQuery) {
      const meter = await findRow(organisationId, id);
      checkSpan(query.from, query.to, query.windowSize);
      const groups = groupsOf(query.groupBy, meter.group_by);
      checkQueryFilters(query.filter, meter.group_by);
      const timeZone = query.timezone ?? (await zoneOf(db, organisationId));
      const from = new Date(query.from);
      const to = new Date(query.to);
      let entityIds: Array<string | null> = [null];
      if (query.customerId !== undefined) {
        orNotFound(await customersIn(db).findAnyById(organisationId, query.customerId), 'Customer', 'query.customerId');
        entityIds = await entitiesIn(db).customerEntityIds(organisationId, query.customerId);
      }
      if (query.entityId !== undefined) {
        const live = await entitiesIn(db).liveCustomerEntityIds(organisationId, [query.entityId]);
        if (!live.has(query.entityId) || (query.customerId !== undefined && !entityIds.includes(query.entityId))) throw AppError.notFound('Entity', 'query.entityId');
        entityIds = [query.entityId];
      }
      const members: UsageMember[] = entityIds.map((customerEntityId) => ({ key: 'query', customerEntityId, from, to }));
      const spec = specOf(meter);
      const dimensions = groups.filter((name) => name !== CUSTOMER_GROUP);
      const byCustomer = groups.includes(CUSTOMER_GROUP);
      const { rows, total } = await aggregateUsageWindows(db, {
        organisationId,
        metric: meter.metric,
        spec,
        narrowing: query.filter,
        members,
        windowSize: query.windowSize,
        timeZone,
        dimensions,
        byCustomer,
        limit: query.limit,
        offset: (query.page - 1) * query.limit,
      });
      const names = [...dimensions, ...(byCustomer ? [CUSTOMER_GROUP] : [])];
      return {
        meterId: meter.id,
        from: query.from,
        to: query.to,
        windowSize: query.windowSize,
        timezone: timeZone,
        rows: rows.map((row) => ({
          windowStart: row.windowStart,
          windowEnd: row.windowEnd,
          groups: Object.fromEntries(names.map((name, index) => [name, row.groups[index] ?? null])),
          value: formatExactOrNull(row.value),
        })),
        page: query.page,
        limit: query.limit,
        total,
      };
    },
  };
}

export type MeterService = ReturnType<typeof createMeterService>;
