import { usageIngestionWorkflowId } from '../../workflows/shared';
import { waitFor } from '../support/wait';
import type { UsageGroupActivities, UsageGroupInput } from '../../workflows/usage-ingestion.types';
import { devServerEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';
import { answerOf, countsOf, submitBatch } from './support/usage-submissions';

jest.setTimeout(90_000);

const fakes = fakeActivities<UsageGroupActivities>({
  ingestUsageGroup: async (input) => ({ verdicts: input.batches.map((batch) => ({ batchId: batch.batchId, summary: countsOf(batch.events) })) }),
  failUsageBatches: async () => undefined,
});

// The dev server suggests continue-as-new once a history passes this length, which a few batches reach.
const environment = useWorkflowEnvironment(() => devServerEnvironment(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=40']), fakes.activities);

describe('the usage ingestion workflow on a long history', () => {
  it('when the server suggests continue-as-new while batches keep coming, then runs drain and hand over, and every batch is ingested once and answered with its own counts', async () => {
    const organisationId = 'org_long';
    const batches = Array.from({ length: 36 }, (_, index) => ({ batchId: `bat_${index}`, chunkCount: 1, events: index + 1 }));

    const answers: unknown[] = [];
    // Three at a time, so that submissions arrive while a run drains.
    for (let wave = 0; wave < batches.length; wave += 3) {
      answers.push(...(await Promise.all(batches.slice(wave, wave + 3).map((batch) => submitBatch(environment(), organisationId, batch)))));
    }

    expect(answers).toEqual(batches.map((batch) => answerOf(batch.events)));
    const ingested = fakes.callsOf('ingestUsageGroup').flatMap((call) => (call.input as unknown as UsageGroupInput).batches.map((batch) => batch.batchId));
    expect([...ingested].sort()).toEqual(batches.map((batch) => batch.batchId).sort());
    // More than one run took them: the first continued as new. The newest run is the one still running
    // (asked of the execution itself, which is current); the list comes from visibility, which the server
    // fills a moment after a run's change, so it is read until it has caught up with that run.
    const current = await environment().client.workflow.getHandle(usageIngestionWorkflowId(organisationId)).describe();
    expect(current.status.name).toBe('RUNNING');
    const runs = await waitFor(async () => {
      const listed = new Map<string, string>();
      for await (const execution of environment().client.workflow.list({ query: `WorkflowId = '${usageIngestionWorkflowId(organisationId)}'` })) listed.set(execution.runId, execution.status.name);
      return listed.get(current.runId) === 'RUNNING' ? [...listed.values()] : undefined;
    }, 10_000);
    expect(runs.filter((status) => status === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(1);
    expect(runs.filter((status) => status === 'RUNNING')).toHaveLength(1);
  });
});
