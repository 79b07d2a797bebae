import type { Knex } from 'knex';
import { directionOf, newlyCrossed, periodAt, periodsSpanning, type AlertPeriod, type BillingSchedule } from '../../domain/alerts';
import { AppError, BUSINESS_FAILURE_TYPES } from '../../domain/errors';
import { formatExact, sumAmounts } from '../../domain/money';
import type { CreditEntryEvent, UsageCorrected, UsageIngested } from '../../domain/events';
import { recordEvents, type OutboxEvent } from '../../events/outbox';
import { plansIn } from '../billing-plans';
import { contractsIn } from '../contracts';
import { creditsIn } from '../credits';
import { entitiesIn } from '../customers';
import { metersIn, specOf } from '../meters';
import { getOrganisationSettings } from '../organisation-settings';
import { aggregateUsage, bucketOf, counterSums, emptyAggregate, type CounterSpan, type UsageMember } from '../usage';
import { dayIn, zoneAsRead } from '../../domain/zoned-days';
import { alertFigure, createAlertRepository, firedKey, type AlertRow, type CrossedThreshold } from './alerts.repository';

/**
 * A contract's usage charges so far in its current billing period, in its currency, as the rating engine
 * computes them: answered by the invoice runs (the rating engine's caller) through the composition root,
 * read inside the evaluation's transaction.
 */
export type PeriodSpend = (db: Knex, organisationId: string, contractId: string, at: Date) => Promise<{ currency: string; amount: string }>;

/** What changed for an organisation, as a batch of domain events tells it. */
export interface AlertChanges {
  /**
   * Customers whose usage grew: of which metrics, between which timestamps, and through which ingested
   * batches (`null` when a correction, which names no batch, is among the changes, or when an alert is evaluated afresh: its whole span counts).
   */
  usage: Map<string, UsageGrowth>;
  /** Customers whose credit balance or spend may have changed. */
  balances: Set<string>;
}

export interface UsageGrowth {
  from: Date;
  to: Date;
  metrics: Set<string>;
  batches: Set<string> | null;
}

/** An organisation's changes, empty. */
const noChanges = (): AlertChanges => ({ usage: new Map(), balances: new Set() });

/**
 * What a batch of domain events changed, per organisation: usage stored (`usage.ingested`), credit granted
 * or expired, invoices raised (which take credit and are charged against spend), and the steps that give
 * credit back or take it again (a cancel or undo of an invoice, a credit note's issue, void or undo).
 * Other events change nothing alerts watch.
 */
export function changesOf(events: readonly OutboxEvent[]): Map<string, AlertChanges> {
  const changes = new Map<string, AlertChanges>();
  const of = (organisationId: string) => changes.get(organisationId) ?? changes.set(organisationId, noChanges()).get(organisationId)!;
  for (const event of events) {
    if (event.payload.triggered) continue;
    switch (event.type) {
      case 'usage.ingested':
      case 'usage.corrected': {
        const data = event.payload.data as UsageIngested | UsageCorrected;
        const usage = of(event.organisation_id).usage;
        const from = new Date(data.from);
        const to = new Date(data.to);
        const batch = 'batchId' in data ? data.batchId : null;
        for (const customerId of data.customerIds) {
          const known = usage.get(customerId);
          if (!known) usage.set(customerId, { from, to, metrics: new Set(data.metrics), batches: batch === null ? null : new Set([batch]) });
          else {
            const batches = known.batches === null || batch === null ? null : new Set([...known.batches, batch]);
            usage.set(customerId, { from: from < known.from ? from : known.from, to: to > known.to ? to : known.to, metrics: new Set([...known.metrics, ...data.metrics]), batches });
          }
        }
        break;
      }
      case 'credits.granted':
      case 'credits.expired':
        of(event.organisation_id).balances.add((event.payload.data as CreditEntryEvent).customerId);
        break;
      // Each of these may move a credit balance: a raise takes credit, its undo and a cancel give it back,
      // a credit note settled on the balance adds to it and its void or undo takes it back again.
      case 'invoice.raised':
      case 'invoice.cancelled':
      case 'invoice.transition_undone':
      case 'credit_note.issued':
      case 'credit_note.voided':
      case 'credit_note.transition_undone': {
        const customerId = (event.payload.data as { customerId?: string | null }).customerId;
        if (customerId) of(event.organisation_id).balances.add(customerId);
        break;
      }
    }
  }
  return changes;
}

/** One alert's value in one period. */
interface Reading {
  alert: AlertRow;
  period: AlertPeriod;
  value: string;
}

/** A `never` alert's one period: from the quarter hour it was created in (a rollup bucket's edge), for ever. */
const lifetimeOf = (alert: AlertRow): AlertPeriod => ({ start: bucketOf(alert.created_at), end: null });

/** The billing schedules of the alerts' contracts, by contract id, read in two statements. */
async function schedulesOf(trx: Knex, organisationId: string, alerts: readonly AlertRow[]): Promise<Map<string, BillingSchedule[]>> {
  const contractIds = [...new Set(alerts.flatMap((alert) => (alert.contract_id ? [alert.contract_id] : [])))];
  const schedules = new Map<string, BillingSchedule[]>();
  if (contractIds.length === 0) return schedules;
  const contracts = await contractsIn(trx).findMany(organisationId, contractIds);
  const plans = new Map((await plansIn(trx).findMany(organisationId, [...new Set(contracts.flatMap((contract) => contract.plans.map((plan) => plan.planId)))])).map((plan) => [plan.id, plan]));
  for (const contract of contracts) {
    schedules.set(
      contract.id,
      contract.plans.flatMap((plan) => {
        const billing = plans.get(plan.planId);
        return billing ? [{ kind: billing.billingPeriod, anchor: contract.billingAnchor, startDate: plan.startDate, endDate: plan.endDate }] : [];
      }),
    );
  }
  return schedules;
}

/**
 * Reads the alerts' values and records the thresholds newly crossed, in `trx`: one trigger row per
 * (alert, threshold, period), inserted unless it exists (the unique key decides between concurrent
 * evaluations), and `alert.triggered` for each row new here. Safe to repeat: a second run finds the rows and
 * records nothing. `now` places the balances and spend, which have no timestamps of their own, in a period.
 */
export async function evaluateAlerts(trx: Knex, organisationId: string, alerts: readonly AlertRow[], changes: AlertChanges, now: Date, spend: PeriodSpend): Promise<number> {
  if (alerts.length === 0) return 0;
  const { timezone } = await getOrganisationSettings(trx, organisationId);
  const schedules = await schedulesOf(trx, organisationId, alerts);
  const periodOf = (alert: AlertRow, instant: Date) => (alert.recurring === 'never' ? lifetimeOf(alert) : periodAt(instant, timezone, schedules.get(alert.contract_id ?? '') ?? []));

  // Usage of the last days of the year 9999 lies in periods that end past the calendar: they are not
  // evaluated, rather than stop the relay that hands on every organisation's events.
  const inCalendar = <T>(work: () => T, otherwise: T): T => {
    try {
      return work();
    } catch (error) {
      if (error instanceof AppError && error.kind === 'validation') return otherwise;
      throw error;
    }
  };
  const spanned = (alert: AlertRow, from: Date, to: Date): AlertPeriod[] => {
    const schedule = schedules.get(alert.contract_id ?? '') ?? [];
    const latest = inCalendar(() => periodsSpanning(from, to, timezone, schedule), []);
    // A span longer than the periods looked at (a correction moving usage years back) still reads its first.
    const first = latest[0] && latest[0].start > from ? inCalendar(() => periodAt(from, timezone, schedule), undefined) : undefined;
    return first ? [first, ...latest] : latest;
  };
  const periodsOf: PeriodsOf = {
    spanned: (alert, from, to) => (alert.recurring === 'never' ? (to >= lifetimeOf(alert).start ? [lifetimeOf(alert)] : []) : spanned(alert, from, to)),
    at: (alert, instant) => inCalendar(() => periodOf(alert, instant), undefined),
  };
  const readings = [
    ...(await usageReadings(trx, organisationId, alerts, changes, timezone, periodsOf)),
    ...(await balanceReadings(trx, organisationId, alerts, changes, (alert) => periodOf(alert, now))),
    ...(await spendReadings(trx, organisationId, alerts, changes, now, spend, (alert) => periodOf(alert, now))),
  ];
  return recordCrossings(trx, organisationId, readings);
}

/**
 * Whether an alert's period is read from its usage counter: the alert has one, kept in the organisation's
 * time zone as it is now, and the period is whole days of it (a `never` alert's starts at its creation).
 */
const countedPeriod = (alert: AlertRow, period: AlertPeriod, timeZone: string): period is AlertPeriod & { end: Date } =>
  alert.counter_id !== null && alert.counter_time_zone === timeZone && alert.recurring === 'period' && period.end !== null;

/**
 * Usage alerts on a customer whose usage of the meter's metric grew: per period, the sum of the alert's usage
 * counter's days (one statement for all of them), or else the meter's aggregate (one statement per meter).
 */
async function usageReadings(
  trx: Knex,
  organisationId: string,
  alerts: readonly AlertRow[],
  changes: AlertChanges,
  timeZone: string,
  periodsOf: PeriodsOf,
): Promise<Reading[]> {
  const usageAlerts = alerts.filter((alert) => alert.metric === 'usage' && changes.usage.has(alert.customer_id));
  if (usageAlerts.length === 0) return [];
  const meters = new Map((await metersIn(trx).findMany(organisationId, [...new Set(usageAlerts.map((alert) => alert.meter_id!))])).map((meter) => [meter.id, meter]));
  const entities = new Map<string, string[]>();
  for (const entity of await entitiesIn(trx).customerEntitiesOf(organisationId, [...new Set(usageAlerts.map((alert) => alert.customer_id))])) {
    entities.set(entity.customer_id, [...(entities.get(entity.customer_id) ?? []), entity.id]);
  }

  const readings: Reading[] = [];
  const counted = new Map<string, { alert: AlertRow; period: AlertPeriod }>();
  const spans: CounterSpan[] = [];
  for (const [meterId, meter] of meters) {
    const wanted = new Map<string, { alert: AlertRow; period: AlertPeriod }>();
    const members: UsageMember[] = [];
    for (const alert of usageAlerts.filter((candidate) => candidate.meter_id === meterId)) {
      const grew = changes.usage.get(alert.customer_id)!;
      if (!grew.metrics.has(meter.metric)) continue;
      const spanned = periodsOf.spanned(alert, grew.from, grew.to);
      const periods =
        spanned.length > 1 && grew.batches && alert.recurring !== 'never'
          ? await periodsOfBatchEvents(trx, { organisationId, entityIds: entities.get(alert.customer_id) ?? [], metric: meter.metric, batches: grew.batches, timeZone }, (instant) => periodsOf.at(alert, instant))
          : spanned;
      for (const period of periods) {
        const key = firedKey(alert.id, period.start);
        if (countedPeriod(alert, period, timeZone)) {
          counted.set(key, { alert, period });
          spans.push({ key, counterId: alert.counter_id!, fromDay: dayIn(timeZone, period.start), toDay: dayIn(timeZone, period.end) });
          continue;
        }
        wanted.set(key, { alert, period });
        for (const customerEntityId of entities.get(alert.customer_id) ?? []) members.push({ key, customerEntityId, from: period.start, to: period.end });
      }
    }
    if (members.length === 0) continue;
    const spec = specOf(meter);
    const values = new Map((await aggregateUsage(trx, { organisationId, metric: meter.metric, spec, members })).map((group) => [group.key, group.value]));
    for (const [key, { alert, period }] of wanted) {
      const value = values.has(key) ? values.get(key)! : emptyAggregate(spec);
      if (value !== null) readings.push({ alert, period, value });
    }
  }
  const sums = await counterSums(trx, spans);
  for (const [key, { alert, period }] of counted) readings.push({ alert, period, value: sums.get(key) ?? '0' });
  return readings;
}

/** An alert's periods: those sharing an instant with a span, and the one an instant falls in (none past the calendar). */
interface PeriodsOf {
  spanned: (alert: AlertRow, from: Date, to: Date) => AlertPeriod[];
  at: (alert: AlertRow, instant: Date) => AlertPeriod | undefined;
}

/**
 * The periods in which the batches stored an event of the metric for the customer's entities, in order,
 * however far apart: a batch of January's late usage and today's usage changed January and December, not
 * the months between, whose alerts have nothing new to say. One instant per local day the events fall
 * on (periods are whole days of the zone) places them.
 */
async function periodsOfBatchEvents(
  trx: Knex,
  of: { organisationId: string; entityIds: readonly string[]; metric: string; batches: ReadonlySet<string>; timeZone: string },
  periodAt: (instant: Date) => AlertPeriod | undefined,
): Promise<AlertPeriod[]> {
  if (of.entityIds.length === 0) return [];
  const { rows } = await trx.raw<{ rows: Array<{ at: Date }> }>(
    `SELECT min(e."timestamp") AS at FROM usage_events e
      WHERE e.organisation_id = ? AND e.metric = ? AND e.customer_entity_id = ANY(?::text[]) AND e.batch_id = ANY(?::text[])
      GROUP BY date_trunc('day', e."timestamp" AT TIME ZONE ?)`,
    [of.organisationId, of.metric, [...of.entityIds], [...of.batches], zoneAsRead(of.timeZone)],
  );
  const periods = new Map<number, AlertPeriod>();
  for (const { at } of rows) {
    const period = periodAt(at);
    if (period) periods.set(period.start.getTime(), period);
  }
  return [...periods.values()].sort((a, b) => a.start.getTime() - b.start.getTime());
}

/** Credit-balance alerts on a customer whose credit may have changed: the balance in the alert's currency (none held: 0). */
async function balanceReadings(trx: Knex, organisationId: string, alerts: readonly AlertRow[], changes: AlertChanges, periodOf: (alert: AlertRow) => AlertPeriod): Promise<Reading[]> {
  const balanceAlerts = alerts.filter((alert) => alert.metric === 'credit_balance' && changes.balances.has(alert.customer_id));
  const balances = new Map<string, Map<string, string>>();
  for (const customerId of new Set(balanceAlerts.map((alert) => alert.customer_id))) {
    balances.set(customerId, new Map((await creditsIn(trx).balances(organisationId, customerId)).map((row) => [row.currency, row.balance])));
  }
  return balanceAlerts.map((alert) => ({ alert, period: periodOf(alert), value: balances.get(alert.customer_id)?.get(alert.currency!) ?? '0' }));
}

/**
 * Spend alerts on a customer whose usage or invoices changed: the rating engine's period-to-date usage
 * charges of the alert's contract, or of each of the customer's contracts in the alert's currency, summed.
 */
async function spendReadings(trx: Knex, organisationId: string, alerts: readonly AlertRow[], changes: AlertChanges, now: Date, spend: PeriodSpend, periodOf: (alert: AlertRow) => AlertPeriod): Promise<Reading[]> {
  const spendAlerts = alerts.filter((alert) => alert.metric === 'spend' && (changes.balances.has(alert.customer_id) || changes.usage.has(alert.customer_id)));
  const spent = new Map<string, { currency: string; amount: string } | null>();
  // A contract the engine cannot rate now (no plan in force, a price it refuses) adds nothing: the
  // evaluation of the others goes on, and the relay is never held up by it.
  const spendOf = async (contractId: string) => {
    if (!spent.has(contractId)) spent.set(contractId, await spend(trx, organisationId, contractId, now).catch((error: unknown) => (error instanceof AppError && BUSINESS_FAILURE_TYPES.includes(error.kind) ? null : Promise.reject(error))));
    return spent.get(contractId);
  };
  const readings: Reading[] = [];
  for (const alert of spendAlerts) {
    const contractIds = alert.contract_id ? [alert.contract_id] : await contractsIn(trx).activeIdsOf(organisationId, alert.customer_id, alert.currency!);
    const amounts: string[] = [];
    for (const contractId of contractIds) {
      const contractSpend = await spendOf(contractId);
      if (contractSpend?.currency === alert.currency) amounts.push(contractSpend.amount);
    }
    readings.push({ alert, period: periodOf(alert), value: sumAmounts(amounts).toFixed() });
  }
  return readings;
}

/** Records the thresholds each reading newly crossed, and announces those no other evaluation recorded first. */
async function recordCrossings(trx: Knex, organisationId: string, everyReading: readonly Reading[]): Promise<number> {
  // A reading that has reached none of its alert's thresholds crosses nothing, fired before or not.
  const readings = everyReading.filter(({ alert, value }) => newlyCrossed(alert.thresholds, value, directionOf(alert.metric), []).length > 0);
  if (readings.length === 0) return 0;
  const alerts = createAlertRepository(trx);
  const fired = await alerts.fired(
    [...new Set(readings.map((reading) => reading.alert.id))],
    [...new Set(readings.map((reading) => reading.period.start.getTime()))].map((time) => new Date(time)),
  );
  const crossings: CrossedThreshold[] = readings.flatMap(({ alert, period, value }) =>
    newlyCrossed(alert.thresholds, value, directionOf(alert.metric), fired.get(firedKey(alert.id, period.start)) ?? []).map((threshold) => ({
      organisationId,
      alertId: alert.id,
      threshold,
      value,
      periodStart: period.start,
    })),
  );
  const recorded = await alerts.recordTriggers(crossings);
  const alertOf = new Map(readings.map((reading) => [reading.alert.id, reading.alert]));
  await recordEvents(
    trx,
    organisationId,
    'alert.triggered',
    recorded.map((row) => ({ alertId: row.alert_id, threshold: formatExact(row.threshold), value: alertFigure(alertOf.get(row.alert_id)!, row.value), periodStart: row.period_start.toISOString() })),
  );
  return recorded.length;
}
