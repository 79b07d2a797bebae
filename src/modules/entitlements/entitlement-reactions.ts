import type { Knex } from 'knex';
import type { EntitlementCreated, UsageCorrected, UsageIngested } from '../../domain/events';
import type { EventSubscriber } from '../../events/relay';
import type { OutboxEvent } from '../../events/outbox';
import type { TemporalHandle } from '../../temporal/client';
import { entitlementPeriodWorkflowId, searchAttributes } from '../../../workflows/ids';
import type { EntitlementPeriodService } from './entitlements.service';

/** Starts the period workflow of a metered entitlement; one already running for it is left running. */
async function startPeriods(temporal: TemporalHandle, organisationId: string, entitlement: EntitlementCreated): Promise<void> {
  await temporal.bounded(() =>
    temporal.workflows.start('entitlementPeriodWorkflow', {
      workflowId: entitlementPeriodWorkflowId(entitlement.entitlementId),
      args: [{ organisationId, entitlementId: entitlement.entitlementId }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      ...searchAttributes({ organisationId, customerId: entitlement.customerId }),
    }),
  );
}

/**
 * The relay's subscriber for entitlements. A metered entitlement created gets its period workflow (a
 * Temporal outage leaves the event in the outbox, to be handed on again). Usage that grew is checked for
 * exhaustion: for each organisation in the batch, the customers and metrics of its `usage.ingested` events
 * are taken together and their metered entitlements read once, set-based. Safe to repeat: a workflow
 * start finds the one already running, and an exhaustion is announced once per period.
 */
export function entitlementSubscriber(deps: { periods: EntitlementPeriodService; temporal: TemporalHandle }): EventSubscriber {
  return {
    name: 'entitlements',
    async handle(trx: Knex.Transaction, events: readonly OutboxEvent[]) {
      const byOrganisation = new Map<string, { customers: Set<string>; metrics: Set<string> }>();
      for (const event of events) {
        if (event.type === 'entitlement.created') {
          const data = event.payload.data as EntitlementCreated;
          if (data.type === 'metered') await startPeriods(deps.temporal, event.organisation_id, data);
        }
        if (event.type !== 'usage.ingested' && event.type !== 'usage.corrected') continue;
        const data = event.payload.data as UsageIngested | UsageCorrected;
        const touched = byOrganisation.get(event.organisation_id) ?? { customers: new Set(), metrics: new Set() };
        for (const id of data.customerIds) touched.customers.add(id);
        for (const metric of data.metrics) touched.metrics.add(metric);
        byOrganisation.set(event.organisation_id, touched);
      }
      for (const [organisationId, touched] of byOrganisation) await deps.periods.announceExhausted(trx, organisationId, [...touched.customers], [...touched.metrics]);
    },
  };
}
