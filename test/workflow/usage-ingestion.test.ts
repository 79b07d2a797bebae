import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError, fromApplicationFailure, toApplicationFailure } from '../../src/domain/errors';
import { waitFor } from '../support/wait';
import { INTERNAL_FAILURE, usageIngestionWorkflowId } from '../../workflows/shared';
import { submitBatchSignal, submittedBatchQuery, type SubmittedBatch, type UsageGroupActivities, type UsageGroupInput } from '../../workflows/usage-ingestion.types';
import { nextGroup } from '../../workflows/usage-ingestion.workflow';
import { devServerEnvironment, useWorkflowEnvironment } from './support/environment';
import { deferred, fakeActivities } from './support/fake-activities';
import { answerOf, countsOf, submitBatch } from './support/usage-submissions';

jest.setTimeout(60_000);

const counted = async (input: UsageGroupInput) => ({ verdicts: input.batches.map((batch) => ({ batchId: batch.batchId, summary: countsOf(batch.events) })) });
const fakes = fakeActivities<UsageGroupActivities>({
  ingestUsageGroup: counted,
  failUsageBatches: async () => undefined,
});
// The dev server: Update-with-start is not in the time-skipping test server, and no step here waits on a clock.
const environment = useWorkflowEnvironment(() => devServerEnvironment([]), fakes.activities);
beforeEach(() => fakes.reset());

let organisations = 0;
/** A fresh organisation per test: its own ingestion workflow. */
function organisation(): { organisationId: string; batch: (events: number) => SubmittedBatch } {
  organisations += 1;
  const organisationId = `org_${organisations}`;
  let batches = 0;
  return {
    organisationId,
    batch: (events) => {
      batches += 1;
      return { batchId: `${organisationId}_bat_${batches}`, chunkCount: Math.ceil(events / 1000), events };
    },
  };
}

/** The batch ids of each group the fake activity was given, in order. */
const groupsIngested = () => fakes.callsOf('ingestUsageGroup').map((call) => (call.input as unknown as UsageGroupInput).batches.map((batch) => batch.batchId));

/** Holds every group's write until `release` is called; answers each batch's counts then. */
function holdGroups() {
  const gate = deferred();
  fakes.behave('ingestUsageGroup', async (input) => {
    await gate.promise;
    return counted(input);
  });
  return gate.resolve;
}

/**
 * Submits `first` with every group's write held, and waits until its group is being written: what a test
 * submits next queues behind it. Answers the release, the first answer (in a list to add to) and the handle.
 */
async function behindHeldGroup(organisationId: string, first: SubmittedBatch) {
  const release = holdGroups();
  const answers: Array<Promise<unknown>> = [submitBatch(environment(), organisationId, first)];
  await waitFor(() => (fakes.callsOf('ingestUsageGroup').length === 1 ? true : undefined), 20_000, 20);
  const handle = environment().client.workflow.getHandle(usageIngestionWorkflowId(organisationId));
  const untilQueued = (batchId: string) => waitFor(async () => ((await handle.query(submittedBatchQuery, batchId)) === 'queued' ? true : undefined), 20_000, 20);
  return { release, answers, handle, untilQueued };
}

describe('the group of the next batches', () => {
  const batch = (batchId: string, events: number): SubmittedBatch => ({ batchId, chunkCount: Math.ceil(events / 1000), events });

  it('when batches are queued, then the group takes them from the front while their events stay within 10,000', () => {
    expect(nextGroup([batch('a', 6000), batch('b', 5000), batch('c', 1000)]).map((b) => b.batchId)).toEqual(['a']);
    expect(nextGroup([batch('b', 5000), batch('c', 1000), batch('d', 4000), batch('e', 1)]).map((b) => b.batchId)).toEqual(['b', 'c', 'd']);
  });

  it('when the first batch alone holds 10,000 events, then it is a group of its own', () => {
    expect(nextGroup([batch('a', 10_000), batch('b', 1)]).map((b) => b.batchId)).toEqual(['a']);
  });
});

describe('usage ingestion workflow (group commit)', () => {
  it('when one batch is submitted to an idle organisation, then it goes at once as a group of its own and the Update answers its counts', async () => {
    const { organisationId, batch } = organisation();
    const first = batch(30);
    expect(await submitBatch(environment(), organisationId, first)).toEqual(answerOf(30));
    expect(groupsIngested()).toEqual([[first.batchId]]);
  });

  it("when the group's step answers a batch's per-event outcomes, then its Update answers them with its counts", async () => {
    const { organisationId, batch } = organisation();
    const failedRecords = [{ index: 3, error: 'customer entity not found', code: 2002, statusCode: 404 }];
    const duplicateEvents = [{ index: 5, eventId: 'evt-5' }];
    fakes.behave('ingestUsageGroup', async (input) => ({
      verdicts: input.batches.map((queued) => ({ batchId: queued.batchId, summary: { success: 9, failed: 1, total: 10, duplicates: 1 }, failedRecords, duplicateEvents })),
    }));

    expect(await submitBatch(environment(), organisationId, batch(10))).toEqual({ summary: { success: 9, failed: 1, total: 10, duplicates: 1 }, failedRecords, duplicateEvents });
  });

  it('when batches arrive while a group is being written, then they go together as the next group, each answered with its own counts', async () => {
    const { organisationId, batch } = organisation();
    const first = batch(1000);
    const later = [batch(2000), batch(3000), batch(4000)];
    const { release, answers, handle, untilQueued } = await behindHeldGroup(organisationId, first);
    answers.push(...later.map((queued) => submitBatch(environment(), organisationId, queued)));
    for (const queued of later) await untilQueued(queued.batchId);
    expect(await handle.query(submittedBatchQuery, first.batchId)).toBe('ingesting');

    release();

    expect(await Promise.all(answers)).toEqual([answerOf(1000), answerOf(2000), answerOf(3000), answerOf(4000)]);
    // Sent at once, they queue in whatever order they arrive: one group holds all three.
    expect(groupsIngested().map((group) => [...group].sort())).toEqual([[first.batchId], later.map((queued) => queued.batchId).sort()]);
    expect(await handle.query(submittedBatchQuery, first.batchId)).toBe('done');
  });

  it('when the queue holds more than 10,000 events, then it goes as several groups, none over 10,000', async () => {
    const { organisationId, batch } = organisation();
    const first = batch(10);
    const later = [batch(6000), batch(5000), batch(1000)];
    const { release, answers, untilQueued } = await behindHeldGroup(organisationId, first);
    // One at a time, so that they queue in this order.
    for (const queued of later) {
      answers.push(submitBatch(environment(), organisationId, queued));
      await untilQueued(queued.batchId);
    }

    release();

    expect(await Promise.all(answers)).toEqual([answerOf(10), answerOf(6000), answerOf(5000), answerOf(1000)]);
    expect(groupsIngested()).toEqual([[first.batchId], [later[0]!.batchId], [later[1]!.batchId, later[2]!.batchId]]);
  });

  it('when one batch of a group is refused, then its Update fails with the refusal and the others are answered', async () => {
    const { organisationId, batch } = organisation();
    const refused = batch(7);
    const kept = batch(9);
    const { release, answers, untilQueued } = await behindHeldGroup(organisationId, batch(5));
    fakes.behave('ingestUsageGroup', async (input) => ({
      verdicts: input.batches.map((queued) =>
        queued.batchId === refused.batchId
          ? { batchId: queued.batchId, refusal: { kind: 'conflict' as const, message: 'abandoned', items: [{ code: 1003, message: 'abandoned' }] } }
          : { batchId: queued.batchId, summary: countsOf(queued.events) },
      ),
    }));
    for (const queued of [refused, kept]) {
      answers.push(submitBatch(environment(), organisationId, queued).catch((error: unknown) => error));
      await untilQueued(queued.batchId);
    }

    release();
    const [, refusal, keptAnswer] = await Promise.all(answers);

    expect(refusal).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(fromApplicationFailure(refusal)).toMatchObject({ kind: 'conflict', message: 'abandoned' });
    expect(keptAnswer).toEqual(answerOf(9));
  });

  it("when a group gives up on a fault that is not a business failure, then its batches' reason says so without the fault's text, which may hold SQL", async () => {
    const { organisationId, batch } = organisation();
    fakes.behave('ingestUsageGroup', async () => {
      throw ApplicationFailure.create({ message: 'insert into "meter_rollups" ("meter_id") values ($1) - index row size 4112 exceeds btree version 4 maximum 2704', type: 'error', nonRetryable: true });
    });
    const first = batch(2);

    await submitBatch(environment(), organisationId, first).catch((error: unknown) => error);

    expect(fakes.callsOf('failUsageBatches').map((call) => call.input)).toEqual([{ batchIds: [first.batchId], error: INTERNAL_FAILURE }]);
  });

  it('when a group gives up, then each of its batches is marked failed with the reason and each Update fails', async () => {
    const { organisationId, batch } = organisation();
    fakes.behave('ingestUsageGroup', async () => {
      throw toApplicationFailure(AppError.validation('a value does not fit'));
    });
    const first = batch(3);

    const failure = await submitBatch(environment(), organisationId, first).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(fakes.callsOf('failUsageBatches').map((call) => call.input)).toEqual([{ batchIds: [first.batchId], error: 'a value does not fit' }]);
    // A business failure is never retried: the group's step ran once.
    expect(fakes.callsOf('ingestUsageGroup')).toHaveLength(1);
    // The organisation's workflow goes on: the next batch is ingested.
    fakes.behave('ingestUsageGroup', counted);
    expect(await submitBatch(environment(), organisationId, batch(4))).toEqual(answerOf(4));
  });

  it('when a group gives up and marking its batches failed fails too, then each Update fails and the workflow goes on with the next batch', async () => {
    const { organisationId, batch } = organisation();
    fakes.behave('ingestUsageGroup', async () => {
      throw toApplicationFailure(AppError.validation('a value does not fit'));
    });
    fakes.behave('failUsageBatches', async () => {
      throw toApplicationFailure(AppError.validation('Postgres refused the bookkeeping'));
    });
    const first = batch(3);

    expect(await submitBatch(environment(), organisationId, first).catch((error: unknown) => error)).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(fakes.callsOf('failUsageBatches')).toHaveLength(1);
    // The same run takes the next batch: it did not fail with the bookkeeping.
    const handle = environment().client.workflow.getHandle(usageIngestionWorkflowId(organisationId));
    const run = await handle.describe();
    expect(run.status.name).toBe('RUNNING');
    fakes.behave('ingestUsageGroup', counted);
    expect(await submitBatch(environment(), organisationId, batch(4))).toEqual(answerOf(4));
    expect(await handle.describe()).toMatchObject({ runId: run.runId, status: { name: 'RUNNING' } });
  });

  it('when a batch is handed over twice, by signal and by Update, then it is ingested once and the Update answers its counts', async () => {
    const { organisationId, batch } = organisation();
    const first = batch(2);
    const twice = batch(8);
    const { release, answers, handle, untilQueued } = await behindHeldGroup(organisationId, first);
    await handle.signal(submitBatchSignal, twice);
    await handle.signal(submitBatchSignal, twice);
    answers.push(submitBatch(environment(), organisationId, twice));
    await untilQueued(twice.batchId);

    release();

    expect(await Promise.all(answers)).toEqual([answerOf(2), answerOf(8)]);
    expect(groupsIngested()).toEqual([[first.batchId], [twice.batchId]]);
    // Handed over again once ingested: answered from this run's verdict, not written again.
    expect(await submitBatch(environment(), organisationId, twice)).toEqual(answerOf(8));
    expect(groupsIngested()).toHaveLength(2);
  });
});
