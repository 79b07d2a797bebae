import { WorkflowFailedError } from '@temporalio/client';
import { AppError, toApplicationFailure } from '../../src/domain/errors';
import { usageBatchWorkflowId } from '../../workflows/shared';
import type { UsageActivities } from '../../workflows/usage-batch.types';
import { usageBatchWorkflow } from '../../workflows/usage-batch.workflow';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(30_000);

const outcome = { success: 2, failed: 1, duplicates: 0, failedRecords: [] };
const fakes = fakeActivities<UsageActivities>({
  ingestUsageChunk: async () => outcome,
  completeUsageBatch: async () => undefined,
  failUsageBatch: async () => undefined,
});
const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
beforeEach(() => fakes.reset());

let batches = 0;
function runBatch(chunkCount: number) {
  batches += 1;
  const batchId = `bat_${batches}`;
  return environment().client.workflow.execute(usageBatchWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: usageBatchWorkflowId(batchId),
    args: [{ batchId, organisationId: 'org_1', chunkCount }],
  });
}

describe('usage batch workflow', () => {
  it('when every chunk gets through, then their outcomes are merged and the batch is completed', async () => {
    const summary = await runBatch(3);
    expect(summary).toEqual({ success: 6, failed: 3, total: 9, duplicates: 0 });
    expect(fakes.callsOf('completeUsageBatch')).toHaveLength(1);
    expect(fakes.callsOf('failUsageBatch')).toHaveLength(0);
  });

  it('when a chunk gives up, then the batch is marked failed with the reason instead of staying processing', async () => {
    fakes.behave('ingestUsageChunk', async (input) => {
      if (input.chunkIndex === 1) throw toApplicationFailure(AppError.validation('a value does not fit'));
      return outcome;
    });
    const failure = await runBatch(2).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(fakes.callsOf('failUsageBatch')).toEqual([{ name: 'failUsageBatch', input: { batchId: expect.any(String), error: 'a value does not fit' } }]);
    expect(fakes.callsOf('completeUsageBatch')).toHaveLength(0);
    // A business failure is never retried: the failing chunk ran its activity once.
    expect(fakes.callsOf('ingestUsageChunk').filter((call) => call.input.chunkIndex === 1)).toHaveLength(1);
  });
});
