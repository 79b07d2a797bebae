import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import { formatExact, toDecimal } from '../../domain/money';
import { domainEvent, type EntitlementPeriodEvent } from '../../domain/events';
import type { Page, PageQuery } from '../../http/paging';
import { recordEvent, recordEvents } from '../../events/outbox';
import { customersIn } from '../customers';
import { metersIn, rollupMeterOf } from '../meters';
import { zoneOf } from '../organisation-settings';
import { COUNTABLE, releaseCounter, takeCounter } from '../usage';
import { currentPeriod, currentPeriodUsages, valueOfReading, valuesOf, type Reading } from './entitlement-values';
import type { CreateEntitlementBody, CreateFeatureBody, EntitlementValue, EntitlementView, FeatureView, CreateGrantBody, GrantView, UpdateFeatureBody } from './entitlements.schemas';
import { createEntitlementRepository, type EntitlementWithFeature, type FeatureRow, type GrantRow } from './entitlements.repository';

const toFeature = (row: FeatureRow): FeatureView => ({
  id: row.id,
  key: row.key,
  name: row.name,
  meterId: row.meter_id,
  filters: row.filters,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const toGrantView = (row: GrantRow, remaining: string): GrantView => ({
  id: row.id,
  entitlementId: row.entitlement_id,
  amount: formatExact(row.amount),
  remaining,
  effectiveAt: row.effective_at.toISOString(),
  expiresAt: row.expires_at?.toISOString() ?? null,
  priority: row.priority,
  createdAt: row.created_at.toISOString(),
});

function toEntitlement(entitlement: EntitlementWithFeature, reading: Reading): EntitlementView {
  return {
    id: entitlement.id,
    customerId: entitlement.customer_id,
    featureId: entitlement.feature_id,
    anchor: entitlement.anchor?.toISOString() ?? null,
    createdAt: entitlement.created_at.toISOString(),
    ...valueOfReading(reading),
  };
}

/**
 * A feature's meter, checked: the organisation's (404 otherwise, as for any id not in the caller's
 * organisation), and one that sums or counts (what a balance burns down).
 */
async function countableMeter(trx: Knex, organisationId: string, meterId: string, path = 'body.meterId') {
  const meter = orNotFound(await metersIn(trx).findById(organisationId, meterId), 'Meter');
  if (!COUNTABLE.has(meter.aggregation)) throw AppError.validation(`meter ${meterId} takes the ${meter.aggregation} of its events; a metered feature counts a meter that sums or counts`, path);
  return meter;
}

const duplicateKey = (key: string) => (error: unknown) => {
  if (isUniqueViolation(error)) throw AppError.conflict(`a feature with key "${key}" already exists`);
  throw error;
};

/**
 * Features, entitlements and grants, and the check integrators gate their product on. A new entitlement
 * announces itself (`entitlement.created`); the worker starts a metered one's period workflow from it.
 */
export function createEntitlementService(db: Knex) {
  const repository = createEntitlementRepository(db);

  async function requireEntitlement(organisationId: string, customerId: string, featureKey: string): Promise<EntitlementWithFeature> {
    orNotFound(await customersIn(db).findById(organisationId, customerId), 'Customer');
    return orNotFound(await repository.findEntitlement(organisationId, customerId, featureKey), 'Entitlement');
  }

  return {
    async createFeature(organisationId: string, body: CreateFeatureBody): Promise<FeatureView> {
      if (body.filters?.length && !body.meterId) throw AppError.validation('filters narrow a meter: give meterId', 'body.filters');
      return db
        .transaction(async (trx) => {
          if (body.meterId) await countableMeter(trx, organisationId, body.meterId);
          return toFeature(await createEntitlementRepository(trx).insertFeature(organisationId, { key: body.key, name: body.name, meter_id: body.meterId ?? null, filters: body.filters ?? [] }));
        })
        .catch(duplicateKey(body.key));
    },

    async listFeatures(organisationId: string, paging: PageQuery): Promise<Page<FeatureView>> {
      const page = await repository.listFeatures(organisationId, paging);
      return { ...page, items: page.items.map(toFeature) };
    },

    async getFeature(organisationId: string, id: string): Promise<FeatureView> {
      return toFeature(orNotFound(await repository.findFeature(organisationId, id), 'Feature'));
    },

    /** What a feature counts (its meter and filters) changes only while no entitlement gives it. */
    async updateFeature(organisationId: string, id: string, body: UpdateFeatureBody): Promise<FeatureView> {
      return db.transaction(async (trx) => {
        const features = createEntitlementRepository(trx);
        const feature = orNotFound(await features.findFeature(organisationId, id, 'update'), 'Feature');
        const recounts = body.meterId !== undefined || body.filters !== undefined;
        if (recounts && (await features.countEntitlementsOfFeature(id)) > 0) {
          throw AppError.conflict(`entitlements give feature "${feature.key}": what it counts (meterId, filters) can no longer change; create a new feature instead`);
        }
        const meterId = body.meterId === undefined ? feature.meter_id : body.meterId;
        if (body.meterId) await countableMeter(trx, organisationId, body.meterId);
        if ((body.filters ?? feature.filters).length > 0 && !meterId) throw AppError.validation('filters narrow a meter: give meterId', 'body.filters');
        return toFeature(await features.updateFeature(id, { ...(body.name !== undefined ? { name: body.name } : {}), ...(body.meterId !== undefined ? { meter_id: body.meterId } : {}), ...(body.filters !== undefined ? { filters: body.filters } : {}) }));
      });
    },

    async deleteFeature(organisationId: string, id: string): Promise<void> {
      await db.transaction(async (trx) => {
        const features = createEntitlementRepository(trx);
        const feature = orNotFound(await features.findFeature(organisationId, id, 'update'), 'Feature');
        const given = await features.countEntitlementsOfFeature(id);
        if (given > 0) throw AppError.conflict(`${given} entitlement(s) give feature "${feature.key}"; delete them first`);
        await features.deleteFeature(id);
      });
    },

    /**
     * One entitlement per customer and feature. A metered one takes the usage counter of its customer,
     * meter and filters (made and filled from the usage already stored if it is the first), and its periods
     * are days of the organisation's time zone as it is now.
     */
    async createEntitlement(organisationId: string, customerId: string, body: CreateEntitlementBody, now = new Date()): Promise<EntitlementView> {
      const created = await db.transaction(async (trx) => {
        orNotFound(await customersIn(trx).findById(organisationId, customerId), 'Customer');
        const entitlements = createEntitlementRepository(trx);
        const feature = await entitlements.findFeatureByKey(organisationId, body.featureKey, 'share');
        if (!feature) throw AppError.validation(`feature "${body.featureKey}" does not exist`, 'body.featureKey');
        if (await entitlements.findEntitlement(organisationId, customerId, body.featureKey)) throw AppError.conflict(`customer ${customerId} already has an entitlement to "${body.featureKey}"`);
        let metered: { counter_id: string; time_zone: string; anchor: Date; period_end: Date; metric: string } | null = null;
        if (body.type === 'metered') {
          if (!feature.meter_id) throw AppError.validation(`feature "${feature.key}" counts no meter: a metered entitlement needs a feature with a meterId`, 'body.featureKey');
          // The feature's meter may have changed its aggregation since: the request names the feature.
          const meter = await countableMeter(trx, organisationId, feature.meter_id, 'body.featureKey');
          const timeZone = await zoneOf(trx, organisationId);
          const anchor = body.anchor ? new Date(body.anchor) : now;
          const counterId = await takeCounter(trx, organisationId, { customerId, meterId: meter.id, filters: feature.filters, timeZone }, rollupMeterOf(meter));
          const period = currentPeriod({ anchor, usage_period: body.usagePeriod!, time_zone: timeZone }, now);
          metered = { counter_id: counterId, time_zone: timeZone, anchor, period_end: period.end, metric: meter.metric };
        }
        // Two requests at once both pass the check above; the second insert finds the first's row.
        const row = await entitlements.insertEntitlement({
          organisation_id: organisationId,
          customer_id: customerId,
          feature_id: feature.id,
          type: body.type,
          config: body.config ?? null,
          usage_limit: body.limit ?? null,
          usage_period: body.usagePeriod ?? null,
          anchor: metered?.anchor ?? null,
          is_soft_limit: body.isSoftLimit ?? false,
          time_zone: metered?.time_zone ?? null,
          counter_id: metered?.counter_id ?? null,
          period_end: metered?.period_end ?? null,
        });
        if (!row) throw AppError.conflict(`customer ${customerId} already has an entitlement to "${body.featureKey}"`);
        await recordEvent(trx, organisationId, domainEvent('entitlement.created', { entitlementId: row.id, customerId, featureKey: feature.key, type: row.type }));
        // Made on a period whose usage already used it up: announced now, as usage reaching it would be.
        if (metered) await announceExhausted(trx, organisationId, [customerId], [metered.metric], now);
        return orNotFound(await entitlements.findEntitlementById(row.id), 'Entitlement');
      });
      const reading = (await valuesOf(db, [created], now)).get(created.id)!;
      return toEntitlement(created, reading);
    },

    async deleteEntitlement(organisationId: string, customerId: string, featureKey: string): Promise<string> {
      return db.transaction(async (trx) => {
        orNotFound(await customersIn(trx).findById(organisationId, customerId), 'Customer');
        const entitlements = createEntitlementRepository(trx);
        const entitlement = orNotFound(await entitlements.findEntitlement(organisationId, customerId, featureKey, 'update'), 'Entitlement');
        await entitlements.deleteEntitlement(entitlement.id);
        if (entitlement.counter_id) await releaseCounter(trx, entitlement.counter_id);
        return entitlement.id;
      });
    },

    /**
     * The check: may the customer use the feature now, and how much is left. One round trip: the
     * entitlement of the live customer with its grants and its usage counter's days; the customer is read
     * apart only when there is no such entitlement, to tell which of the two is missing.
     */
    async value(organisationId: string, customerId: string, featureKey: string, at = new Date()): Promise<EntitlementValue> {
      const entitlement = await repository.findEntitlementWithGrants(organisationId, customerId, featureKey, at);
      if (!entitlement) {
        orNotFound(await customersIn(db).findById(organisationId, customerId), 'Customer');
        throw AppError.notFound('Entitlement');
      }
      return valueOfReading((await valuesOf(db, [entitlement], at)).get(entitlement.id)!);
    },

    /** Every entitlement of the customer with its value, a page at a time, by feature key. */
    async list(organisationId: string, customerId: string, paging: PageQuery, at = new Date()): Promise<Page<EntitlementView>> {
      orNotFound(await customersIn(db).findById(organisationId, customerId), 'Customer');
      const page = await repository.listEntitlements(organisationId, customerId, paging);
      const readings = await valuesOf(db, page.items, at);
      return { ...page, items: page.items.map((entitlement) => toEntitlement(entitlement, readings.get(entitlement.id)!)) };
    },

    async createGrant(organisationId: string, customerId: string, featureKey: string, body: CreateGrantBody, now = new Date()): Promise<GrantView> {
      const entitlement = await requireEntitlement(organisationId, customerId, featureKey);
      if (entitlement.type !== 'metered') throw AppError.conflict(`the entitlement to "${featureKey}" is ${entitlement.type}: grants are for metered entitlements`);
      const effectiveAt = body.effectiveAt ? new Date(body.effectiveAt) : now;
      const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
      if (expiresAt && expiresAt <= effectiveAt) throw AppError.validation('must be after effectiveAt', 'body.expiresAt');
      const row = await repository.insertGrant({ organisation_id: organisationId, entitlement_id: entitlement.id, amount: body.amount, effective_at: effectiveAt, expires_at: expiresAt, priority: body.priority ?? 0 });
      const reading = (await valuesOf(db, [entitlement], now)).get(entitlement.id)!;
      return toGrantView(row, grantLeft(reading, row, now));
    },

    async listGrants(organisationId: string, customerId: string, featureKey: string, paging: PageQuery, at = new Date()): Promise<Page<GrantView>> {
      const entitlement = await requireEntitlement(organisationId, customerId, featureKey);
      const page = await repository.listGrants(entitlement.id, paging);
      const reading = (await valuesOf(db, [entitlement], at)).get(entitlement.id)!;
      return { ...page, items: page.items.map((row) => toGrantView(row, grantLeft(reading, row, at))) };
    },
  };
}

/** What a grant has left at `at`: its whole amount until it takes effect, nothing once it expired. */
function grantLeft(reading: Reading, grant: GrantRow, at: Date): string {
  if (!reading.metered || (grant.expires_at !== null && grant.expires_at <= at)) return '0';
  return reading.reading.grantsLeft[grant.id] ?? formatExact(grant.amount);
}

export type EntitlementService = ReturnType<typeof createEntitlementService>;

/**
 * What the worker does for entitlements: their periods' resets (for the period workflow), and their
 * exhaustion, announced as usage arrives.
 */
export function createEntitlementPeriodService(db: Knex) {
  return {
    async periodEnd(entitlementId: string): Promise<string | null> {
      const entitlement = await createEntitlementRepository(db).findEntitlementById(entitlementId);
      return entitlement?.type === 'metered' && entitlement.period_end ? entitlement.period_end.toISOString() : null;
    },

    /** Announces the period starting at `periodStart`, if the entitlement's last announced period ends there. */
    async announceReset(entitlementId: string, periodStart: Date): Promise<void> {
      await db.transaction(async (trx) => {
        const entitlements = createEntitlementRepository(trx);
        const entitlement = await entitlements.findEntitlementById(entitlementId);
        if (!entitlement || entitlement.type !== 'metered') return;
        const period = currentPeriod(entitlement, periodStart);
        if (!(await entitlements.advancePeriod(entitlement.id, periodStart, period.end))) return;
        await recordEvent(trx, entitlement.organisation_id, domainEvent('entitlement.reset', periodEvent(entitlement, period.start, period.end)));
      });
    },

    /**
     * Inside the relay's transaction: of the metered entitlements of the customers whose usage of the
     * metrics grew, those whose balance reached zero in their current period are announced exhausted.
     */
    announceExhausted,
  };
}

/**
 * Inside the relay's transaction: of the metered entitlements of the customers whose usage of the
 * metrics grew, those whose balance reached zero in their current period are announced exhausted, once
 * per period (the entitlement row keeps the period announced).
 */
async function announceExhausted(trx: Knex, organisationId: string, customerIds: readonly string[], metrics: readonly string[], at = new Date()): Promise<void> {
  const entitlements = createEntitlementRepository(trx);
  const candidates = (await entitlements.meteredOfCustomers(organisationId, customerIds, metrics)).filter(
    (entitlement) => entitlement.exhausted_period_start === null || entitlement.exhausted_period_start < currentPeriod(entitlement, at).start,
  );
  if (candidates.length === 0) return;
  // Only those whose period's usage reached their limit (or that have none) are read in full.
  const usages = await currentPeriodUsages(trx, candidates, at);
  const reached = candidates.filter((entitlement) => entitlement.usage_limit === null || toDecimal(usages.get(entitlement.id) ?? '0').greaterThanOrEqualTo(entitlement.usage_limit));
  if (reached.length === 0) return;
  const readings = await valuesOf(trx, reached, at);
  const exhausted = [];
  for (const entitlement of reached) {
    const reading = readings.get(entitlement.id)!;
    if (!reading.metered) continue;
    const { value, period } = reading.reading;
    if (Number(value.balance) > 0 || Number(value.usage) <= 0) continue;
    if (!(await entitlements.markExhausted(entitlement.id, period.start))) continue;
    exhausted.push({
      ...periodEvent(entitlement, period.start, period.end),
      usage: value.usage!,
      limit: value.limit,
      balance: value.balance!,
      overage: value.overage!,
      isSoftLimit: entitlement.is_soft_limit,
    });
  }
  if (exhausted.length > 0) await recordEvents(trx, organisationId, 'entitlement.exhausted', exhausted);
}

export type EntitlementPeriodService = ReturnType<typeof createEntitlementPeriodService>;

const periodEvent = (entitlement: EntitlementWithFeature, start: Date, end: Date): EntitlementPeriodEvent => ({
  entitlementId: entitlement.id,
  customerId: entitlement.customer_id,
  featureKey: entitlement.feature_key,
  periodStart: start.toISOString(),
  periodEnd: end.toISOString(),
});
