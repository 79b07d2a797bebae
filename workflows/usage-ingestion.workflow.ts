import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, executeChild, setHandler, workflowInfo } from '@temporalio/workflow';
import { AppError, toApplicationFailure } from '../src/domain/errors';
import { activitiesOf, failureReason, localActivitiesOf, searchAttributes, usageGroupWorkflowId } from './shared';
import {
  DRAINING,
  submitBatchSignal,
  submitBatchUpdate,
  submittedBatchQuery,
  type BatchVerdict,
  type SubmittedBatch,
  type UsageGroupActivities,
  type UsageGroupInput,
  type UsageGroupOutcome,
  type UsageIngestionInput,
} from './usage-ingestion.types';

const groupLocalActivities = localActivitiesOf<Pick<UsageGroupActivities, 'ingestUsageGroup'>>('ingestion');
const bookkeepingActivities = activitiesOf<Pick<UsageGroupActivities, 'failUsageBatches'>>('bookkeeping');

/** The most events one group (one child, one local activity) takes: the batches queued behind it wait for the next. */
export const GROUP_EVENTS = 10_000;
/** History events one run gathers before it drains and continues as new (each batch adds about three). */
const HISTORY_PER_RUN = 3_000;

/** The batches that arrived together: ingested by one local activity, in one workflow task of their own. */
export async function usageGroupWorkflow(input: UsageGroupInput): Promise<UsageGroupOutcome> {
  return groupLocalActivities.ingestUsageGroup(input);
}

/**
 * The batches queued, front first, that make the next group: at least one, then more while their events
 * stay within `GROUP_EVENTS`.
 */
export function nextGroup(queue: readonly SubmittedBatch[]): SubmittedBatch[] {
  const group: SubmittedBatch[] = [];
  let events = 0;
  for (const batch of queue) {
    if (group.length > 0 && events + batch.events > GROUP_EVENTS) break;
    group.push(batch);
    events += batch.events;
  }
  return group;
}

/**
 * Group commit: one long-lived workflow per organisation (or per shard of it), fed stored batches by
 * Update-with-start. The first batch goes at once as a group of its own (a child workflow that returns each
 * batch's counts and, while they are few, its per-event outcomes); batches submitted while a group is
 * being written queue and go together as the next group, up to `GROUP_EVENTS` events. Each submission is
 * answered with its own batch's outcome.
 *
 * Postgres holds every batch (its claim check, its chunks' outcomes, its status), so a batch submitted
 * twice is written once, and one that this workflow lost can be submitted again. Before its history grows
 * long the run refuses new submissions (`DRAINING`, which the API sends again), finishes what it holds
 * and continues as new.
 */
export async function usageIngestionWorkflow(input: UsageIngestionInput): Promise<void> {
  const queue: SubmittedBatch[] = [...(input.queued ?? [])];
  const ingesting = new Set<string>();
  const verdicts = new Map<string, BatchVerdict>();
  let draining = false;
  const historyFull = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= HISTORY_PER_RUN;

  /** Queues a batch this run neither holds nor has ingested; one refused before (abandoned, then revived) is queued again. */
  const enqueue = (batch: SubmittedBatch) => {
    if (ingesting.has(batch.batchId) || queue.some((queued) => queued.batchId === batch.batchId)) return;
    const verdict = verdicts.get(batch.batchId);
    if (verdict && !('refusal' in verdict)) return;
    verdicts.delete(batch.batchId);
    queue.push(batch);
  };

  setHandler(submitBatchSignal, enqueue);
  setHandler(
    submitBatchUpdate,
    async (batch) => {
      enqueue(batch);
      await condition(() => verdicts.has(batch.batchId));
      const verdict = verdicts.get(batch.batchId)!;
      if ('refusal' in verdict) throw toApplicationFailure(new AppError(verdict.refusal.kind, verdict.refusal.message, verdict.refusal.items));
      const { batchId: _batchId, ...outcome } = verdict;
      return outcome;
    },
    {
      validator: (_batch: SubmittedBatch) => {
        if (draining) throw ApplicationFailure.create({ type: 'draining', message: DRAINING, nonRetryable: true });
      },
    },
  );
  setHandler(submittedBatchQuery, (batchId) =>
    ingesting.has(batchId) ? 'ingesting' : queue.some((queued) => queued.batchId === batchId) ? 'queued' : verdicts.has(batchId) ? 'done' : 'unknown',
  );

  for (;;) {
    // No timer: a workflow without batches waits at no cost, and a batch never waits for a clock.
    await condition(() => queue.length > 0 || historyFull());
    if (queue.length === 0) {
      // Nothing queued or being written: every waiting handler has its answer, and no new one is let in. A
      // batch signalled meanwhile is handed to the next run.
      draining = true;
      await condition(allHandlersFinished);
      return continueAsNew<typeof usageIngestionWorkflow>({ organisationId: input.organisationId, queued: [...queue] });
    }
    if (historyFull()) draining = true;
    const group = nextGroup(queue);
    queue.splice(0, group.length);
    for (const batch of group) ingesting.add(batch.batchId);
    let outcome: UsageGroupOutcome;
    try {
      outcome = await executeChild(usageGroupWorkflow, {
        workflowId: usageGroupWorkflowId(group[0]!.batchId),
        args: [{ organisationId: input.organisationId, batches: group }],
        ...searchAttributes({ organisationId: input.organisationId }, 'usageGroupWorkflow'),
      });
    } catch (error) {
      // The group gave up (its retries spent): each of its batches fails with the reason; the chunks that
      // got through keep their events, and submitting a batch again retries only what is missing.
      const reason = failureReason(error);
      try {
        await bookkeepingActivities.failUsageBatches({ batchIds: group.map((batch) => batch.batchId), error: reason });
      } catch {
        // Postgres still away past the bookkeeping's own retries: the batches stay `processing` there until
        // reading one finds that nothing will finish it (read repair marks it failed). The run goes on for
        // the batches queued behind, and each submitter still gets its refusal.
      }
      outcome = { verdicts: group.map((batch) => ({ batchId: batch.batchId, refusal: { kind: 'internal', message: reason, items: [] } })) };
    }
    for (const verdict of outcome.verdicts) verdicts.set(verdict.batchId, verdict);
    for (const batch of group) ingesting.delete(batch.batchId);
  }
}
