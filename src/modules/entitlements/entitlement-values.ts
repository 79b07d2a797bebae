import type { Knex } from 'knex';
import { meteredValue, periodAt, periodStartDay, periodsToRead, type Grant, type PeriodSpan, type UsagePeriod } from '../../domain/entitlements';
import { formatExact } from '../../domain/money';
import { dayIn } from '../../domain/zoned-days';
import { counterSums, sumCounterDays, type CounterSpan } from '../usage';
import type { EntitlementValue } from './entitlements.schemas';
import { createEntitlementRepository, type EntitlementWithFeature, type GrantRow } from './entitlements.repository';

export const toGrant = (row: GrantRow): Grant => ({ id: row.id, amount: row.amount, effectiveAt: row.effective_at, expiresAt: row.expires_at, priority: row.priority });

/** A metered entitlement's value at an instant, with its current period and what each grant has left. */
export interface MeteredReading {
  value: EntitlementValue;
  period: PeriodSpan;
  grantsLeft: Record<string, string>;
}

export type Reading = { metered: true; reading: MeteredReading } | { metered: false; value: EntitlementValue };

/** The current period of a metered entitlement at `at`. */
export const currentPeriod = (entitlement: Pick<EntitlementWithFeature, 'anchor' | 'usage_period' | 'time_zone'>, at: Date): PeriodSpan =>
  periodAt(entitlement.anchor!, entitlement.usage_period as UsagePeriod, entitlement.time_zone!, at);

/**
 * The values at `at` of the entitlements, read set-based: their grants in one query, and the usage of every
 * period each needs (its current one, and those since its first grant took effect) as sums of its usage
 * counter's day rows, in one statement. Grants and days read with the entitlements are not read again.
 */
export async function valuesOf(db: Knex, entitlements: readonly EntitlementWithFeature[], at: Date): Promise<Map<string, Reading>> {
  const readings = new Map<string, Reading>();
  const metered = entitlements.filter((entitlement) => entitlement.type === 'metered');
  for (const entitlement of entitlements) if (entitlement.type !== 'metered') readings.set(entitlement.id, { metered: false, value: unmeteredValue(entitlement) });
  if (metered.length === 0) return readings;

  const grants = new Map<string, Grant[]>();
  // Grants read with their entitlements are not read again.
  const unread = metered.filter((entitlement) => entitlement.grants === undefined);
  for (const entitlement of metered) if (entitlement.grants) grants.set(entitlement.id, entitlement.grants.map(toGrant));
  for (const row of await createEntitlementRepository(db).grantsOf(unread.map((entitlement) => entitlement.id))) grants.set(row.entitlement_id, [...(grants.get(row.entitlement_id) ?? []), toGrant(row)]);
  const periods = new Map(metered.map((entitlement) => [entitlement.id, periodsToRead(entitlement.anchor!, entitlement.usage_period as UsagePeriod, entitlement.time_zone!, grants.get(entitlement.id) ?? [], at)]));
  const daysRead = new Map(metered.flatMap((entitlement) => (entitlement.counter_days ? [[entitlement.id, entitlement.counter_days] as const] : [])));
  const spans: Array<CounterSpan & { entitlementId: string }> = metered.flatMap((entitlement) =>
    periods.get(entitlement.id)!.map((span) => ({ ...counterSpan(entitlement, span.index, `${entitlement.id} ${span.index}`), entitlementId: entitlement.id })),
  );
  // Days read with the entitlement (the check) are summed here; the others' in one statement.
  const usage = await counterSums(db, spans.filter((span) => !daysRead.has(span.entitlementId)));
  for (const [entitlementId, days] of daysRead) for (const [key, value] of sumCounterDays(days, spans.filter((span) => span.entitlementId === entitlementId))) usage.set(key, value);

  for (const entitlement of metered) {
    const spansOf = periods.get(entitlement.id)!;
    const reading = meteredValue(
      { limit: entitlement.usage_limit, isSoftLimit: entitlement.is_soft_limit, grants: grants.get(entitlement.id) ?? [] },
      spansOf.map((span) => ({ start: span.start, end: span.end, usage: usage.get(`${entitlement.id} ${span.index}`) ?? '0' })),
      at,
    );
    const period = spansOf.at(-1)!;
    readings.set(entitlement.id, {
      metered: true,
      reading: {
        period,
        grantsLeft: reading.grantsLeft,
        value: {
          ...base(entitlement),
          hasAccess: reading.hasAccess,
          usage: reading.usage,
          limit: entitlement.usage_limit === null ? null : formatExact(entitlement.usage_limit),
          balance: reading.balance,
          overage: reading.overage,
          isSoftLimit: entitlement.is_soft_limit,
          usagePeriod: entitlement.usage_period,
          periodStart: period.start.toISOString(),
          periodEnd: period.end.toISOString(),
        },
      },
    });
  }
  return readings;
}

/**
 * The usage of each metered entitlement's current period at `at`, by entitlement id, in one statement.
 * Grants only add to what a period allows, so an entitlement whose period's usage is below its limit is
 * not used up: this tells, before any grant is read, which may be.
 */
export async function currentPeriodUsages(db: Knex, entitlements: readonly EntitlementWithFeature[], at: Date): Promise<Map<string, string>> {
  return counterSums(
    db,
    entitlements.map((entitlement) => counterSpan(entitlement, currentPeriod(entitlement, at).index, entitlement.id)),
  );
}

/** The days of a metered entitlement's period `index` on its usage counter, as the span `key`. */
function counterSpan(entitlement: EntitlementWithFeature, index: number, key: string): CounterSpan {
  const anchorDay = dayIn(entitlement.time_zone!, entitlement.anchor!);
  const period = entitlement.usage_period as UsagePeriod;
  return { key, counterId: entitlement.counter_id!, fromDay: periodStartDay(anchorDay, period, index), toDay: periodStartDay(anchorDay, period, index + 1) };
}

/** The value as the API shows it. */
export const valueOfReading = (reading: Reading): EntitlementValue => (reading.metered ? reading.reading.value : reading.value);

const base = (entitlement: EntitlementWithFeature) => ({ featureKey: entitlement.feature_key, type: entitlement.type, config: null });

function unmeteredValue(entitlement: EntitlementWithFeature): EntitlementValue {
  return {
    ...base(entitlement),
    hasAccess: true,
    config: entitlement.type === 'static' ? entitlement.config : null,
    usage: null,
    limit: null,
    balance: null,
    overage: null,
    isSoftLimit: null,
    usagePeriod: null,
    periodStart: null,
    periodEnd: null,
  };
}
