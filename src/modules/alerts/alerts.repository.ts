import type { Knex } from 'knex';
import { bulkInsert } from '../../db/bulk';
import { newId } from '../../db/ids';
import type { AlertMetric } from '../../domain/alerts';
import { formatAmount, formatExact } from '../../domain/money';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export type Recurring = 'period' | 'never';

export interface AlertRow {
  id: string;
  organisation_id: string;
  name: string;
  customer_id: string;
  contract_id: string | null;
  metric: AlertMetric;
  meter_id: string | null;
  currency: string | null;
  /** numeric(24,4)[], each as text. */
  thresholds: string[];
  recurring: Recurring;
  /** A usage alert on a meter that sums or counts: the usage counter it reads, and the zone of its days. */
  counter_id: string | null;
  counter_time_zone: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AlertTriggerRow {
  id: string;
  organisation_id: string;
  alert_id: string;
  threshold: string;
  value: string;
  period_start: Date;
  created_at: Date;
}

export type NewAlert = Pick<AlertRow, 'name' | 'customer_id' | 'contract_id' | 'metric' | 'meter_id' | 'currency' | 'thresholds' | 'recurring' | 'counter_id' | 'counter_time_zone'>;

/** A threshold an evaluation found crossed, to be recorded unless it fired already. */
export interface CrossedThreshold {
  organisationId: string;
  alertId: string;
  threshold: string;
  value: string;
  periodStart: Date;
}

const TRIGGER_COLUMNS = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['alert_id', 'text'],
  ['threshold', 'numeric'],
  ['value', 'numeric'],
  ['period_start', 'timestamptz'],
] as const;

/** An alert's columns, its thresholds as text: the driver would read a numeric[] as binary floats. */
const ALERT_COLUMNS = ['id', 'organisation_id', 'name', 'customer_id', 'contract_id', 'metric', 'meter_id', 'currency', 'recurring', 'counter_id', 'counter_time_zone', 'created_at', 'updated_at'];

/** Alerts and the triggers they fired. `db` may be a transaction. */
export function createAlertRepository(db: Knex) {
  const own = (organisationId: string) => db<AlertRow>('alerts').where({ organisation_id: organisationId });
  const rows = (organisationId: string) => own(organisationId).select<AlertRow[]>([...ALERT_COLUMNS, db.raw('thresholds::text[] as thresholds')]);

  return {
    async insert(organisationId: string, alert: NewAlert): Promise<AlertRow> {
      const id = newId('alr');
      await db('alerts').insert({ id, organisation_id: organisationId, ...alert });
      return (await rows(organisationId).where({ id }).first())!;
    },

    async find(organisationId: string, id: string): Promise<AlertRow | undefined> {
      return rows(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<AlertRow>> {
      return paginate<AlertRow, AlertRow>(rows(organisationId), paging, { searchColumns: ['name'], map: (row) => row });
    },

    async update(organisationId: string, id: string, changes: Partial<Pick<AlertRow, 'name' | 'thresholds'>>): Promise<AlertRow | undefined> {
      const updated = await own(organisationId)
        .where({ id })
        .update({ ...changes, updated_at: db.fn.now() });
      return updated > 0 ? rows(organisationId).where({ id }).first() : undefined;
    },

    /** Deletes the alert (its triggers with it); answers the row deleted, if there was one. */
    async delete(organisationId: string, id: string): Promise<Pick<AlertRow, 'id' | 'counter_id'> | undefined> {
      const [row] = await own(organisationId).where({ id }).delete().returning(['id', 'counter_id']);
      return row;
    },

    /** The alerts of the given metrics on any of the customers: one index range per customer. */
    async ofCustomers(organisationId: string, customerIds: readonly string[], metrics: readonly AlertMetric[]): Promise<AlertRow[]> {
      if (customerIds.length === 0 || metrics.length === 0) return [];
      return rows(organisationId)
        .whereRaw('customer_id = any(?::text[])', [customerIds as string[]])
        .whereRaw('metric = any(?::text[])', [metrics as string[]])
        .orderBy('id');
    },

    /** The thresholds already fired by each alert in each of the periods, keyed by `alertId|periodStart`. */
    async fired(alertIds: readonly string[], periodStarts: readonly Date[]): Promise<Map<string, string[]>> {
      const fired = new Map<string, string[]>();
      if (alertIds.length === 0) return fired;
      const rows = await db<AlertTriggerRow>('alert_triggers')
        .whereRaw('alert_id = any(?::text[])', [alertIds as string[]])
        .whereRaw('period_start = any(?::timestamptz[])', [periodStarts.map((start) => start.toISOString())])
        .select('alert_id', 'threshold', 'period_start');
      for (const row of rows) {
        const key = firedKey(row.alert_id, row.period_start);
        fired.set(key, [...(fired.get(key) ?? []), row.threshold]);
      }
      return fired;
    },

    /**
     * Records the crossings in one statement, each unless its (alert, threshold, period) fired already: a
     * concurrent evaluation that inserted the same key first wins, and this one skips it. Answers the rows
     * new here, which alone are announced. Rows go in key order, so concurrent inserts take their locks in
     * the same order.
     */
    async recordTriggers(crossings: readonly CrossedThreshold[]): Promise<AlertTriggerRow[]> {
      const rows = [...crossings]
        .sort((a, b) => a.alertId.localeCompare(b.alertId) || a.periodStart.getTime() - b.periodStart.getTime() || a.threshold.localeCompare(b.threshold))
        .map((crossing) => ({ id: newId('atr'), organisation_id: crossing.organisationId, alert_id: crossing.alertId, threshold: crossing.threshold, value: crossing.value, period_start: crossing.periodStart.toISOString() }));
      return (await bulkInsert(db, 'alert_triggers', TRIGGER_COLUMNS, rows, {
        onConflict: '(alert_id, threshold, period_start) DO NOTHING',
        returning: '*',
      })) as AlertTriggerRow[];
    },

    /** An alert's triggers, newest first. */
    async triggers(organisationId: string, alertId: string, paging: PageQuery): Promise<Page<AlertTriggerRow>> {
      return paginate<AlertTriggerRow, AlertTriggerRow>(db<AlertTriggerRow>('alert_triggers').where({ organisation_id: organisationId, alert_id: alertId }).select('*'), paging, {
        searchColumns: [],
        map: (row) => row,
      });
    },
  };
}

/** A reading of the alert as the API and its events write it: money with its currency's minor unit digits, usage exact. */
export const alertFigure = (alert: Pick<AlertRow, 'metric' | 'currency'>, value: string): string =>
  alert.metric !== 'usage' && alert.currency ? formatAmount(value, alert.currency) : formatExact(value);

/** The key of an alert's period in `fired`. */
export const firedKey = (alertId: string, periodStart: Date): string => `${alertId}|${periodStart.toISOString()}`;

export type AlertRepository = ReturnType<typeof createAlertRepository>;
