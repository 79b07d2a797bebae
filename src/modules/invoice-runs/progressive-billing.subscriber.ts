import type { EventSubscriber } from '../../events/relay';
import type { TemporalHandle } from '../../temporal/client';
import { progressiveBillingWorkflowId, searchAttributes } from '../../../workflows/ids';
import { recheckSignal } from '../../../workflows/progressive-billing.types';
import type { ProgressiveBillingService } from './progressive-billing.service';

/**
 * Progressive billing as a subscriber of the domain events (src/events/relay.ts): the active contracts with
 * thresholds whose customers a relay batch's `usage.ingested` events name are found in one statement, and
 * each gets its check: the workflow `progressive-billing:{contractId}` started, or signalled to check again
 * when it runs. Safe to repeat: a repeated batch only asks for another check, and the claims in Postgres
 * bill each threshold once.
 */
export function progressiveBillingSubscriber(deps: { progressiveBilling: ProgressiveBillingService; temporal: TemporalHandle }): EventSubscriber {
  return {
    name: 'progressive-billing',
    handle: async (trx, events) => {
      for (const check of await deps.progressiveBilling.contractsToCheck(trx, events)) {
        await deps.temporal.bounded(() =>
          deps.temporal.workflows.signalWithStart('progressiveBillingWorkflow', {
            workflowId: progressiveBillingWorkflowId(check.contractId),
            args: [check],
            signal: recheckSignal,
            signalArgs: [],
            ...searchAttributes({ organisationId: check.organisationId, contractId: check.contractId }),
          }),
        );
      }
    },
  };
}
