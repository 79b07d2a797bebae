import { defaultPayloadConverter } from '@temporalio/common';
import { type InvoiceLifecycleInput, lifecycleQuery, markPaidUpdate, raiseUpdate, sendUpdate, undoUpdate, type InvoiceActivities } from '../../workflows/invoice-lifecycle.types';
import { invoiceLifecycleWorkflow } from '../../workflows/invoice-lifecycle.workflow';
import { invoiceWorkflowId } from '../../workflows/shared';
import { devServerEnvironment, TASK_QUEUE, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(30_000);

const fakes = fakeActivities<InvoiceActivities>({
  raiseInvoice: async () => ({ number: 'INV-0042' }),
  sendInvoice: async () => undefined,
  payInvoice: async () => undefined,
  unpayInvoice: async () => undefined,
});

const environment = useWorkflowEnvironment(() => devServerEnvironment(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=12']), fakes.activities);

// The test server never suggests continue-as-new; the dev server does once a history passes this length,
// which a handful of Updates reaches.

describe('the invoice lifecycle workflow on a long history', () => {
  it('when the server suggests continue-as-new, then the next run carries state, steps and sequence', async () => {
    const handle = await environment().client.workflow.start(invoiceLifecycleWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: invoiceWorkflowId('inv_long'),
      args: [{ invoiceId: 'inv_long', organisationId: 'org_1' }],
    });

    await handle.executeUpdate(raiseUpdate);
    await handle.executeUpdate(sendUpdate);
    await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: '2026-02-28' }] });

    const firstRun = await environment().client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    const current = environment().client.workflow.getHandle(handle.workflowId);
    const { runId } = await current.describe();
    expect(runId).not.toBe(handle.firstExecutionRunId);

    // The latest run started from what its predecessor carried...
    const history = await current.fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    const [input] = started.input!.payloads!.map((payload) => defaultPayloadConverter.fromPayload<InvoiceLifecycleInput>(payload));
    expect(input!.carried).toBeDefined();
    // ...and, whichever run took which step, the chain as a whole holds all three.
    expect(await current.query(lifecycleQuery)).toEqual({ state: 'paid', allowedActions: ['cancel', 'undo'], transitions: 3 });

    await current.executeUpdate(undoUpdate);
    expect(fakes.callsOf('unpayInvoice').map((call) => call.input)).toEqual([{ invoiceId: 'inv_long', organisationId: 'org_1', seq: 3, from: 'sent' }]);
    expect(fakes.calls.map((call) => call.input.seq)).toEqual([1, 2, 3, 3]);
  });
});
