import { condition, continueAsNew, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { collectionNudge, type CollectionActivities, type CollectionOutcome, type InvoiceCollectionInput } from './invoice-collection.types';
import { activitiesOf } from './shared';

const gateway = activitiesOf<CollectionActivities>('gatewayCall');
const DAY_MS = 24 * 60 * 60 * 1000;

const steps = activitiesOf<Pick<CollectionActivities, 'nextCollectionStep' | 'settleCollectionAttempt'>>('transition');

/**
 * A gateway step that failed after its own retries (the gateway away for half an hour) is tried again
 * after an hour, for a day at most; then the collection ends with its attempt still pending, and the next
 * nudge (a webhook, a change of the invoice) starts it again from there.
 */
const FAULT_PAUSE_MS = 60 * 60 * 1000;
const MOST_FAULTS = 24;

/** How long a payment in flight (processing, or waiting for the customer) is waited for before the workflow ends. */
const AWAIT_GATEWAY_MS = 7 * DAY_MS;

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
  let faults = 0;
  /** The dunning wait under way, and the payment in flight: their clocks survive nudges. */
  let waiting: { afterAttempt: number; until: number } | undefined;
  let awaiting: { attemptId: string; since: number } | undefined;
  /** Runs a gateway step; a failure after its retries pauses the loop instead of failing the workflow. */
  async function tolerating(step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
      faults = 0;
    } catch (error) {
      faults += 1;
      log.warn('a collection step failed after its retries; it is tried again later', { invoiceId, faults, error: String(error) });
      if (faults < MOST_FAULTS) await condition(() => nudged, FAULT_PAUSE_MS);
    }
  }

  for (;;) {
    if (faults >= MOST_FAULTS) return { reason: `the payment gateway failed ${MOST_FAULTS} times in a row: the attempt stays as recorded` };
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof invoiceCollectionWorkflow>({ organisationId, invoiceId, ...(retryAfterAttempt !== undefined ? { retryAfterAttempt } : {}) });
    }
    nudged = false;
    const step = await steps.nextCollectionStep({ organisationId, invoiceId, ...(retryAfterAttempt !== undefined ? { retryAfterAttempt } : {}) });
    switch (step.next) {
      case 'charge':
        await tolerating(() => gateway.chargeCollectionAttempt({ organisationId, attemptId: step.attemptId }));
        break;
      case 'settle':
        if (settled === step.attemptId) return { reason: `the payment of attempt ${step.attemptId} could not be recorded on the invoice: see reconciliation` };
        await tolerating(async () => {
          await steps.settleCollectionAttempt({ organisationId, attemptId: step.attemptId });
          settled = step.attemptId;
        });
        break;
      case 'await-gateway': {
        if (awaiting?.attemptId !== step.attemptId) awaiting = { attemptId: step.attemptId, since: Date.now() };
        if (Date.now() - awaiting.since > AWAIT_GATEWAY_MS) return { reason: `the gateway has not settled attempt ${step.attemptId} in ${AWAIT_GATEWAY_MS / DAY_MS} days; a webhook or a change of the invoice looks again` };
        if (!(await condition(() => nudged, REFRESH_EVERY_MS))) await tolerating(() => gateway.refreshCollectionAttempt({ organisationId, attemptId: step.attemptId }));
        break;
      }
      case 'wait': {
        // The campaign's days on a durable timer, counted once per failed attempt: a nudge (the invoice
        // paid meanwhile, the failure's own webhook) looks again at once, then waits out what is left.
        // At least a second, so that a campaign of 0 days does not spin through its attempts.
        if (waiting?.afterAttempt !== step.afterAttempt) waiting = { afterAttempt: step.afterAttempt, until: Date.now() + Math.max(1_000, step.days * DAY_MS) };
        const left = waiting.until - Date.now();
        if (left <= 0 || !(await condition(() => nudged, left))) retryAfterAttempt = step.afterAttempt;
        break;
      }
      case 'done':
        return { reason: step.reason };
    }
  }
}
