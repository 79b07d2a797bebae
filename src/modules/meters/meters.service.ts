import type { Knex } from 'knex';
import { getOrganisationSettings } from '../organisation-settings';
import { formatExactOrNull } from '../../domain/money';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { aggregateUsage, emptyAggregate } from '../usage';
import { createMeterRepository, specOf, toMeter, type Aggregation, type Meter, type MeterRow } from './meters.repository';

const duplicateName = (error: unknown): never => {
  if (isUniqueViolation(error)) throw AppError.conflict('A meter with this name exists');
  throw error;
};

export interface MeterUsageQuery {
  customerEntityId?: string;
  /** ISO date-times: from inclusive, to exclusive. */
  from?: string;
  to?: string;
  groupBy?: 'day' | 'month';
}

export function createMeterService(db: Knex) {
  const meters = createMeterRepository(db);

  async function findRow(organisationId: string, id: string): Promise<MeterRow> {
    return orNotFound(await meters.findById(organisationId, id), 'Meter');
  }

  return {
    async create(organisationId: string, meter: { name: string; metric: string; aggregation: Aggregation; uniqueField?: string }): Promise<Meter> {
      return toMeter(await meters.create(organisationId, meter).catch(duplicateName));
    },

    /** unique_count needs its field, whether it is given now or kept from before. */
    async update(
      organisationId: string,
      id: string,
      changes: { name?: string; metric?: string; aggregation?: Aggregation; uniqueField?: string | null },
    ): Promise<Meter> {
      const current = await findRow(organisationId, id);
      const next = { name: changes.name, metric: changes.metric, aggregation: changes.aggregation, unique_field: changes.uniqueField };
      if ((next.aggregation ?? current.aggregation) === 'unique_count' && !(next.unique_field === undefined ? current.unique_field : next.unique_field)) {
        throw AppError.validation('uniqueField is required for unique_count', 'body.uniqueField');
      }
      const updated = await meters.update(organisationId, id, next).catch(duplicateName);
      return toMeter(updated ?? current);
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<Meter>> {
      return meters.list(organisationId, paging);
    },

    async get(organisationId: string, id: string): Promise<Meter> {
      return toMeter(await findRow(organisationId, id));
    },

    /** The metric events take when they are ingested for this meter. */
    async metricOf(organisationId: string, id: string): Promise<string> {
      return (await findRow(organisationId, id)).metric;
    },

    async usage(organisationId: string, id: string, query: MeterUsageQuery) {
      const meter = await findRow(organisationId, id);
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
  };
}

export type MeterService = ReturnType<typeof createMeterService>;
