import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import { formatExact } from '../../domain/money';
import type { OutboxEvent } from '../../events/outbox';
import type { Page, PageQuery } from '../../http/paging';
import { contractsIn } from '../contracts';
import { customersIn } from '../customers';
import { metersIn, rollupMeterOf } from '../meters';
import { zoneOf } from '../organisation-settings';
import { COUNTABLE, releaseCounter, takeCounter } from '../usage';
import { changesOf, evaluateAlerts, type AlertChanges, type PeriodSpend } from './alert-evaluation';
import { alertFigure, createAlertRepository, type AlertRow, type AlertTriggerRow } from './alerts.repository';
import type { AlertTriggerView, AlertView, CreateAlertBody, UpdateAlertBody } from './alerts.schemas';

export function toAlert(row: AlertRow): AlertView {
  return {
    id: row.id,
    name: row.name,
    scope: { customerId: row.customer_id, contractId: row.contract_id },
    metric: row.metric,
    meterId: row.meter_id,
    currency: row.currency,
    thresholds: row.thresholds.map((threshold) => formatExact(threshold)),
    recurring: row.recurring,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function toTrigger(alert: AlertRow, row: AlertTriggerRow): AlertTriggerView {
  return {
    id: row.id,
    alertId: row.alert_id,
    threshold: formatExact(row.threshold),
    value: alertFigure(alert, row.value),
    periodStart: row.period_start.toISOString(),
    createdAt: row.created_at.toISOString(),
  };
}

/** The customer a scope watches: its own, or its contract's; 404 for one outside the organisation. */
async function customerOfScope(db: Knex, organisationId: string, input: CreateAlertBody): Promise<{ customerId: string; contractCurrency: string | null }> {
  if (input.scope.contractId !== undefined) {
    const contract = orNotFound(await contractsIn(db).find(organisationId, input.scope.contractId), 'Contract');
    return { customerId: contract.customerId, contractCurrency: contract.currency };
  }
  orNotFound(await customersIn(db).findById(organisationId, input.scope.customerId!), 'Customer');
  return { customerId: input.scope.customerId!, contractCurrency: null };
}

/** Whatever the alert watches, as if it had just changed: an alert created or changed is evaluated at once. */
async function everythingOf(db: Knex, organisationId: string, alert: AlertRow, now: Date): Promise<AlertChanges> {
  const metrics = new Set(alert.meter_id ? [orNotFound(await metersIn(db).findById(organisationId, alert.meter_id), 'Meter').metric] : []);
  return { usage: new Map([[alert.customer_id, { from: now, to: now, metrics, batches: null }]]), balances: new Set([alert.customer_id]) };
}

/**
 * Alerts (Admin manages them) and their evaluation: at creation and at each change of thresholds, and in
 * the relay, set-based, for the domain events of a batch (`evaluateEvents`).
 */
export function createAlertService(db: Knex, spend: PeriodSpend, clock: () => Date = () => new Date()) {
  const found = async (organisationId: string, id: string) => orNotFound(await createAlertRepository(db).find(organisationId, id), 'Alert');

  /** Evaluates one alert in `trx` against everything it watches. */
  async function evaluateNow(trx: Knex, alert: AlertRow): Promise<void> {
    const now = clock();
    await evaluateAlerts(trx, alert.organisation_id, [alert], await everythingOf(trx, alert.organisation_id, alert, now), now, spend);
  }

  return {
    async create(organisationId: string, input: CreateAlertBody): Promise<AlertView> {
      return db.transaction(async (trx) => {
        const { customerId, contractCurrency } = await customerOfScope(trx, organisationId, input);
        const meter = input.meterId === undefined ? undefined : orNotFound(await metersIn(trx).findById(organisationId, input.meterId), 'Meter');
        if (input.metric === 'spend' && contractCurrency !== null && input.currency !== undefined && input.currency !== contractCurrency) {
          throw AppError.validation(`the contract bills in ${contractCurrency}: a spend alert on it counts in that currency`, 'body.currency');
        }
        const currency = input.currency ?? (input.metric === 'spend' ? contractCurrency : null);
        // A meter that sums or counts is read from its customer's usage counter, per day of the organisation's zone.
        const timeZone = await zoneOf(trx, organisationId);
        const counterId = meter && COUNTABLE.has(meter.aggregation) ? await takeCounter(trx, organisationId, { customerId, meterId: meter.id, filters: [], timeZone }, rollupMeterOf(meter)) : null;
        const alert = await createAlertRepository(trx).insert(organisationId, {
          name: input.name,
          customer_id: customerId,
          contract_id: input.scope.contractId ?? null,
          metric: input.metric,
          meter_id: input.meterId ?? null,
          currency,
          thresholds: input.thresholds,
          recurring: input.recurring,
          counter_id: counterId,
          counter_time_zone: counterId === null ? null : timeZone,
        });
        await evaluateNow(trx, alert);
        return toAlert(alert);
      });
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<AlertView>> {
      const page = await createAlertRepository(db).list(organisationId, paging);
      return { ...page, items: page.items.map(toAlert) };
    },

    async get(organisationId: string, id: string): Promise<AlertView> {
      return toAlert(await found(organisationId, id));
    },

    /** New thresholds are evaluated at once; triggers already fired stay. */
    async update(organisationId: string, id: string, changes: UpdateAlertBody): Promise<AlertView> {
      return db.transaction(async (trx) => {
        const alert = orNotFound(await createAlertRepository(trx).update(organisationId, id, changes), 'Alert');
        if (changes.thresholds !== undefined) await evaluateNow(trx, alert);
        return toAlert(alert);
      });
    },

    /** Deletes the alert and its triggers. */
    async delete(organisationId: string, id: string): Promise<void> {
      await db.transaction(async (trx) => {
        const deleted = await createAlertRepository(trx).delete(organisationId, id);
        if (!deleted) throw AppError.notFound('Alert');
        if (deleted.counter_id) await releaseCounter(trx, deleted.counter_id);
      });
    },

    async triggers(organisationId: string, id: string, paging: PageQuery): Promise<Page<AlertTriggerView>> {
      const alert = await found(organisationId, id);
      const page = await createAlertRepository(db).triggers(organisationId, id, paging);
      return { ...page, items: page.items.map((row) => toTrigger(alert, row)) };
    },

    /**
     * The relay's step (in its transaction, safe to repeat): per organisation, the alerts on the customers
     * the events name, evaluated together, each threshold newly crossed recorded once.
     */
    async evaluateEvents(trx: Knex, events: readonly OutboxEvent[]): Promise<void> {
      const now = clock();
      for (const [organisationId, changes] of changesOf(events)) {
        const usageCustomers = [...changes.usage.keys()];
        const balanceCustomers = [...changes.balances];
        const repository = createAlertRepository(trx);
        const alerts = [
          ...(await repository.ofCustomers(organisationId, usageCustomers, ['usage', 'spend'])),
          ...(await repository.ofCustomers(organisationId, balanceCustomers.filter((customerId) => !changes.usage.has(customerId)), ['spend'])),
          ...(await repository.ofCustomers(organisationId, balanceCustomers, ['credit_balance'])),
        ];
        await evaluateAlerts(trx, organisationId, alerts, changes, now, spend);
      }
    },
  };
}

export type AlertService = ReturnType<typeof createAlertService>;
