import { WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError, fromApplicationFailure, toApplicationFailure } from '../../src/domain/errors';
import type { InvoiceLifecycleInput, LifecycleView } from '../../workflows/invoice-lifecycle.types';
import {
  cancelUpdate,
  invoiceLifecycleWorkflow,
  lifecycleQuery,
  markPaidUpdate,
  raiseUpdate,
  sendUpdate,
  undoUpdate,
} from '../../workflows/invoice-lifecycle.workflow';
import { invoiceWorkflowId } from '../../workflows/shared';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { deferred, fakeActivities, sleep } from './support/fake-activities';

jest.setTimeout(30_000);

const DAY_MS = 24 * 60 * 60 * 1000;
const UNDO_WINDOW_MS = 7 * DAY_MS;

const fakes = fakeActivities({
  raiseInvoice: async () => ({ number: 'INV-0001' }),
  sendInvoice: async () => undefined,
  payInvoice: async () => undefined,
  cancelInvoice: async () => undefined,
  unraiseInvoice: async () => undefined,
  unsendInvoice: async () => undefined,
  unpayInvoice: async () => undefined,
  uncancelInvoice: async () => undefined,
  invoiceUndoWindow: async () => UNDO_WINDOW_MS,
  // What Postgres records of a draft nobody has moved: a refused step finds nothing to reload.
  invoiceSnapshot: async () => ({ state: 'draft', transitions: [], nextSeq: 1 }),
});

const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
let invoices = 0;


beforeEach(() => fakes.reset());

async function startInvoice(carried?: InvoiceLifecycleInput['carried']): Promise<WorkflowHandle<typeof invoiceLifecycleWorkflow>> {
  invoices += 1;
  const invoiceId = `inv_${invoices}`;
  return environment().client.workflow.start(invoiceLifecycleWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: invoiceWorkflowId(invoiceId),
    args: [{ invoiceId, organisationId: 'org_1', ...(carried ? { carried } : {}) }],
  });
}

/** The error model's view of an Update's failure: the innermost failure of one of our kinds. */
async function failureOf(update: Promise<unknown>): Promise<AppError> {
  const error = await update.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  const appError = fromApplicationFailure(error);
  if (!appError) throw new Error(`expected a failure of the error model, got ${String(error)}`);
  return appError;
}

describe('the invoice lifecycle workflow', () => {
  it('when five raise Updates are accepted together, then one raises and the other four are refused as conflicts', async () => {
    const handle = await startInvoice();
    const finishRaise = deferred();
    fakes.behave('raiseInvoice', async () => {
      await finishRaise.promise;
      return { number: 'INV-0001' };
    });

    // All five pass the validator while the invoice is still a draft, so all five queue for the lock.
    const updates = await Promise.all(Array.from({ length: 5 }, () => handle.startUpdate(raiseUpdate, { waitForStage: WorkflowUpdateStage.ACCEPTED })));
    finishRaise.resolve();
    const results = await Promise.allSettled(updates.map((update) => update.result()));

    const raised = results.filter((result): result is PromiseFulfilledResult<LifecycleView> => result.status === 'fulfilled');
    expect(raised.map((result) => result.value.state)).toEqual(['raised']);
    const refused = await Promise.all(results.filter((result) => result.status === 'rejected').map((result) => failureOf(Promise.reject(result.reason))));
    expect(refused.map((error) => [error.kind, error.message])).toEqual(Array(4).fill(['conflict', 'cannot raise an invoice that is raised']));
    expect(refused[0]!.items).toEqual([{ code: 1003, message: 'cannot raise an invoice that is raised' }]);
    expect(fakes.callsOf('raiseInvoice')).toHaveLength(1);
    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'raised', transitions: 1 });
  });

  it('when cancel arrives while raise runs, then cancel waits its turn and cancels the raised invoice', async () => {
    const handle = await startInvoice();
    const events: string[] = [];
    const raiseStarted = deferred();
    const finishRaise = deferred();
    fakes.behave('raiseInvoice', async () => {
      events.push('raise started');
      raiseStarted.resolve();
      await finishRaise.promise;
      events.push('raise finished');
      return { number: 'INV-0002' };
    });
    fakes.behave('cancelInvoice', async () => {
      events.push('cancel started');
    });

    const raise = handle.executeUpdate(raiseUpdate);
    await raiseStarted.promise;
    const cancel = await handle.startUpdate(cancelUpdate, { args: [{ comments: 'ordered by mistake' }], waitForStage: WorkflowUpdateStage.ACCEPTED });
    await sleep(100);
    expect(events).toEqual(['raise started']);
    finishRaise.resolve();

    expect((await raise).state).toBe('raised');
    expect(await cancel.result()).toMatchObject({ state: 'cancelled', transitions: 2 });
    expect(events).toEqual(['raise started', 'raise finished', 'cancel started']);
    expect(fakes.callsOf('cancelInvoice')[0]!.input).toMatchObject({ seq: 2, from: 'raised', comments: 'ordered by mistake' });
  });

  it('when undo is asked, then it runs the inverse of the latest step, and is refused once nothing is left', async () => {
    const handle = await startInvoice();
    await handle.executeUpdate(raiseUpdate);
    await handle.executeUpdate(sendUpdate);

    expect(await handle.executeUpdate(undoUpdate)).toMatchObject({ state: 'raised', transitions: 1 });
    expect(fakes.callsOf('unsendInvoice').map((call) => call.input)).toEqual([{ invoiceId: 'inv_3', organisationId: 'org_1', seq: 2, from: 'raised' }]);

    expect(await handle.executeUpdate(undoUpdate)).toMatchObject({ state: 'draft', transitions: 0 });
    expect(fakes.callsOf('unraiseInvoice').map((call) => call.input)).toEqual([{ invoiceId: 'inv_3', organisationId: 'org_1', seq: 1, from: 'draft' }]);

    const callsBefore = fakes.calls.length;
    const refused = await failureOf(handle.executeUpdate(undoUpdate));
    expect([refused.kind, refused.message]).toEqual(['conflict', 'nothing to undo']);
    expect(fakes.calls).toHaveLength(callsBefore);
    expect(await handle.query(lifecycleQuery)).toEqual({ state: 'draft', allowedActions: ['raise', 'markPaid', 'cancel'], transitions: 0 });
  });

  it.each([
    ['non-retryable failure', () => toApplicationFailure(AppError.conflict('the invoice has no items'))],
    // The retry policy alone must stop a business failure whose thrower forgot to mark it.
    ['failure not marked non-retryable', () => ApplicationFailure.create({ type: 'conflict', message: 'the invoice has no items', nonRetryable: false })],
  ])('when the raise activity fails with a conflict (%s), then the caller gets it after one attempt and nothing is recorded', async (_label, failure) => {
    const handle = await startInvoice();
    fakes.behave('raiseInvoice', async () => {
      throw failure();
    });

    const error = await failureOf(handle.executeUpdate(raiseUpdate));

    expect([error.kind, error.message]).toEqual(['conflict', 'the invoice has no items']);
    expect(fakes.callsOf('raiseInvoice')).toHaveLength(1);
    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'draft', transitions: 0 });
  });

  it('when the raise activity fails with an infrastructure error, then it is retried and the raise succeeds', async () => {
    const handle = await startInvoice();
    fakes.behave('raiseInvoice', async () => {
      if (fakes.callsOf('raiseInvoice').length === 1) throw new Error('connection terminated unexpectedly');
      return { number: 'INV-0009' };
    });

    expect((await handle.executeUpdate(raiseUpdate)).state).toBe('raised');
    expect(fakes.callsOf('raiseInvoice')).toHaveLength(2);
  });

  it('when a run starts with the state its predecessor carried, then it goes on from there: next seq, undo of carried steps', async () => {
    const handle = await startInvoice({
      state: 'sent',
      transitions: [
        { seq: 1, step: 'raise', from: 'draft', to: 'raised' },
        { seq: 2, step: 'send', from: 'raised', to: 'sent' },
      ],
      nextSeq: 3,
    });

    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'sent', transitions: 2 });
    expect(await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: '2026-01-31' }] })).toMatchObject({ state: 'paid', transitions: 3 });
    expect(fakes.callsOf('payInvoice')[0]!.input).toMatchObject({ seq: 3, from: 'sent', paidDate: '2026-01-31' });

    await handle.executeUpdate(undoUpdate);
    await handle.executeUpdate(undoUpdate);
    const steps = fakes.calls.filter((call) => call.name !== 'invoiceUndoWindow');
    expect(steps.map((call) => [call.name, call.input.seq])).toEqual([
      ['payInvoice', 3],
      ['unpayInvoice', 3],
      ['unsendInvoice', 2],
    ]);
    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'raised', transitions: 1 });
  });

  it('when an invoice is paid, then its workflow completes once the undo window has passed, not before', async () => {
    const handle = await startInvoice();
    await handle.executeUpdate(raiseUpdate);
    await handle.executeUpdate(sendUpdate);
    await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: '2026-01-31' }] });
    const paidAt = await environment().currentTimeMs();

    await handle.result();

    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.closeTime!.getTime() - paidAt).toBeGreaterThanOrEqual(UNDO_WINDOW_MS);
    expect(fakes.callsOf('invoiceUndoWindow').map((call) => call.input)).toEqual([{ organisationId: 'org_1' }]);
  });

  it('when a paid invoice is undone inside its window, then the workflow stays open for its next step', async () => {
    const handle = await startInvoice();
    await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: '2026-01-31' }] });
    await environment().sleep(UNDO_WINDOW_MS / 2);
    // Paid from a draft runs raise, send and pay: the undo takes back the payment only.
    expect(await handle.executeUpdate(undoUpdate)).toMatchObject({ state: 'sent' });

    await environment().sleep(UNDO_WINDOW_MS * 2);

    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'sent', transitions: 2 });
  });

  it('when a cancelled invoice has completed after its window, then a run started again carries on from the recorded state', async () => {
    const first = await startInvoice();
    const invoiceId = `inv_${invoices}`;
    await first.executeUpdate(cancelUpdate, { args: [{ comments: 'duplicate' }] });
    await first.result();
    expect((await first.describe()).status.name).toBe('COMPLETED');

    // What the API does for a later Update: start a new run with the state Postgres records.
    const revived = await environment().client.workflow.start(invoiceLifecycleWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId: invoiceWorkflowId(invoiceId),
      args: [{ invoiceId, organisationId: 'org_1', carried: { state: 'cancelled', transitions: [{ seq: 1, step: 'cancel', from: 'draft', to: 'cancelled' }], nextSeq: 2 } }],
    });
    expect(await revived.executeUpdate(undoUpdate)).toMatchObject({ state: 'draft', transitions: 0 });
    expect(fakes.callsOf('uncancelInvoice').map((call) => call.input)).toEqual([{ invoiceId, organisationId: 'org_1', seq: 1, from: 'draft' }]);
  });

  it('when a step is refused because Postgres is ahead of the workflow (a reset), then the state is reloaded once and the transition acts on it', async () => {
    const handle = await startInvoice();
    fakes.behave('raiseInvoice', async () => {
      throw toApplicationFailure(AppError.conflict('the invoice is sent, not draft'));
    });
    fakes.behave('invoiceSnapshot', async () => ({
      state: 'sent',
      transitions: [
        { seq: 1, step: 'raise', from: 'draft', to: 'raised' },
        { seq: 2, step: 'send', from: 'raised', to: 'sent' },
      ],
      nextSeq: 3,
    }));

    expect(await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: '2026-02-01' }] })).toMatchObject({ state: 'paid', transitions: 3 });

    expect(fakes.callsOf('raiseInvoice')).toHaveLength(1);
    expect(fakes.callsOf('sendInvoice')).toHaveLength(0);
    expect(fakes.callsOf('payInvoice').map((call) => call.input)).toEqual([expect.objectContaining({ from: 'sent', seq: 3 })]);
    expect(fakes.callsOf('invoiceSnapshot')).toHaveLength(1);
  });
});
