import { condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { collectionNudge, type CollectionActivities, type CollectionOutcome, type InvoiceCollectionInput } from './invoice-collection.types';
import { activitiesOf } from './shared';

const gateway = activitiesOf<CollectionActivities>('gatewayCall');
const steps = activitiesOf<Pick<CollectionActivities, 'nextCollectionStep' | 'settleCollectionAttempt'>>('transition');

const DAY_MS = 24 * 60 * 60 * 1000;

/** How often a payment the gateway still processes (or that waits for the customer) is read back, when no webhook tells its end. */
const REFRESH_EVERY_MS = 60 * 60 * 1000;

/**
 * One per invoice (`collection:{invoiceId}`): collects what it owes through the organisation's gateway.
 * Every decision is taken from Postgres by `nextCollectionStep` (docs/payments.md): charge the pending
 * attempt, record the payment of one that succeeded, wait for the gateway's answer on one in flight, sit
 * out the dunning campaign's days after a failure, or end. The waits are durable timers, cut short by a
 * nudge (a webhook's answer, the invoice paid by other means).
 */
export async function invoiceCollectionWorkflow(input: InvoiceCollectionInput): Promise<CollectionOutcome> {
  const { organisationId, invoiceId } = input;
  let retryAfterAttempt = input.retryAfterAttempt;
  let nudged = false;
  setHandler(collectionNudge, () => {
    nudged = true;
  });

  /** A settle that left the attempt unrecorded (the invoice refused it) is not tried in a loop. */
  let settled: string | undefined;
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof invoiceCollectionWorkflow>({ organisationId, invoiceId, ...(retryAfterAttempt !== undefined ? { retryAfterAttempt } : {}) });
    }
    nudged = false;
    const step = await steps.nextCollectionStep({ organisationId, invoiceId, ...(retryAfterAttempt !== undefined ? { retryAfterAttempt } : {}) });
    switch (step.next) {
      case 'charge':
        await gateway.chargeCollectionAttempt({ organisationId, attemptId: step.attemptId });
        break;
      case 'settle':
        if (settled === step.attemptId) return { reason: `the payment of attempt ${step.attemptId} could not be recorded on the invoice: see reconciliation` };
        settled = step.attemptId;
        await steps.settleCollectionAttempt({ organisationId, attemptId: step.attemptId });
        break;
      case 'await-gateway':
        if (!(await condition(() => nudged, REFRESH_EVERY_MS))) await gateway.refreshCollectionAttempt({ organisationId, attemptId: step.attemptId });
        break;
      case 'wait':
        // The campaign's days on a durable timer; a nudge (the invoice paid meanwhile) looks again at once.
        if (!(await condition(() => nudged, Math.max(1_000, step.days * DAY_MS)))) retryAfterAttempt = step.afterAttempt;
        break;
      case 'done':
        return { reason: step.reason };
    }
  }
}
