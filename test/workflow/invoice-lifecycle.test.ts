import { Context } from '@temporalio/activity';
import { WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AppError, fromApplicationFailure, toApplicationFailure } from '../../src/domain/errors';
import {
  cancelUpdate,
  lifecycleQuery,
  markPaidUpdate,
  raiseUpdate,
  sendUpdate,
  undoUpdate,
  type InvoiceActivities,
  type InvoiceLifecycleInput,
  type LifecycleView,
} from '../../workflows/invoice-lifecycle.types';
import { invoiceLifecycleWorkflow } from '../../workflows/invoice-lifecycle.workflow';
import { invoiceWorkflowId } from '../../workflows/shared';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { deferred, fakeActivities, sleep } from './support/fake-activities';

jest.setTimeout(30_000);

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const UNDO_WINDOW_MS = 7 * DAY_MS;
const SCHEDULE = [1, 7, 14];

/** What Postgres would hold: each invoice's due date, and the reminders recorded for it. */
const dueDates = new Map<string, string>();
const remindersSent = new Map<string, number[]>();

const fakes = fakeActivities<InvoiceActivities>({
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
  // As the collections service plans: the days of the schedule after the latest reminder recorded.
  invoiceReminderPlan: async ({ invoiceId }) => {
    const dueDate = dueDates.get(invoiceId as string) ?? null;
    const latest = Math.max(0, ...(remindersSent.get(invoiceId as string) ?? []));
    return { dueDate, daysAfterDue: dueDate ? SCHEDULE.filter((days) => days > latest) : [] };
  },
  sendInvoiceReminder: async ({ invoiceId, daysAfterDue }) => {
    remindersSent.set(invoiceId as string, [...(remindersSent.get(invoiceId as string) ?? []), daysAfterDue as number]);
    return 'sent';
  },
});

const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
let invoices = 0;


beforeEach(() => {
  fakes.reset();
  dueDates.clear();
  remindersSent.clear();
});

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
    const steps = fakes.calls.filter((call) => !['invoiceUndoWindow', 'invoiceReminderPlan'].includes(call.name));
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

describe('reminders of an owed invoice', () => {
  /** The test server's clock, which time skipping moves. */
  const now = () => environment().currentTimeMs();
  const sleepUntil = async (at: number) => environment().sleep(at - (await now()));
  const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const startOfDay = (day: string) => Date.parse(`${day}T00:00:00Z`);

  /** The reminders sent, by days after the due date, in the order the worker ran them. */
  const reminded = () => fakes.callsOf('sendInvoiceReminder').map((call) => call.input.daysAfterDue);

  /** Waits, in real time, for reminders the server has already scheduled to reach the worker. */
  async function remindedSoon(count: number): Promise<unknown[]> {
    for (let tries = 0; tries < 100 && reminded().length < count; tries += 1) await sleep(50);
    return reminded();
  }

  /** A raised invoice whose due date is `daysFromToday` from the test server's today. */
  async function owedInvoice(daysFromToday: number): Promise<{ handle: WorkflowHandle<typeof invoiceLifecycleWorkflow>; dueAt: number }> {
    const handle = await startInvoice();
    const dueDate = dayOf(startOfDay(dayOf(await now())) + daysFromToday * DAY_MS);
    dueDates.set(`inv_${invoices}`, dueDate);
    await handle.executeUpdate(raiseUpdate);
    return { handle, dueAt: startOfDay(dueDate) };
  }

  it('when a raised invoice stays unpaid, then reminders go out 1, 7 and 14 days after its due date, each once and none early', async () => {
    // Reminders are scheduled on the server's clock: each activity's scheduled time is when its timer fired.
    const scheduledAt: number[] = [];
    fakes.behave('sendInvoiceReminder', async ({ invoiceId, daysAfterDue }) => {
      scheduledAt.push(Context.current().info.scheduledTimestampMs);
      remindersSent.set(invoiceId as string, [...(remindersSent.get(invoiceId as string) ?? []), daysAfterDue as number]);
      return 'sent';
    });
    // Due in 30 days: the first timer is longer than a 32-bit count of milliseconds.
    const { handle, dueAt } = await owedInvoice(30);

    await sleepUntil(dueAt + DAY_MS - HOUR_MS);
    expect(reminded()).toEqual([]);
    await sleepUntil(dueAt + DAY_MS + HOUR_MS);
    expect(await remindedSoon(1)).toEqual([1]);
    await sleepUntil(dueAt + 7 * DAY_MS - HOUR_MS);
    expect(reminded()).toEqual([1]);
    await sleepUntil(dueAt + 7 * DAY_MS + HOUR_MS);
    expect(await remindedSoon(2)).toEqual([1, 7]);
    await sleepUntil(dueAt + 14 * DAY_MS + HOUR_MS);
    expect(await remindedSoon(3)).toEqual([1, 7, 14]);

    // Each fired on its day: at the start of the day (UTC) the invoice became that many days overdue.
    SCHEDULE.forEach((days, i) => {
      expect(scheduledAt[i]).toBeGreaterThanOrEqual(dueAt + days * DAY_MS);
      expect(scheduledAt[i]).toBeLessThan(dueAt + days * DAY_MS + HOUR_MS);
    });
    expect(fakes.callsOf('sendInvoiceReminder')[0]!.input).toEqual({ invoiceId: `inv_${invoices}`, organisationId: 'org_1', daysAfterDue: 1 });

    // The schedule is over; the invoice is still owed, so its workflow waits for the payment.
    await environment().sleep(30 * DAY_MS);
    expect(reminded()).toEqual([1, 7, 14]);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  });

  it('when the invoice is paid after its first reminder, then no other goes out and the workflow completes after its undo window', async () => {
    const { handle, dueAt } = await owedInvoice(0);
    await sleepUntil(dueAt + DAY_MS + HOUR_MS);
    expect(await remindedSoon(1)).toEqual([1]);

    await handle.executeUpdate(markPaidUpdate, { args: [{ paidDate: dayOf(dueAt + DAY_MS) }] });
    const paidAt = await now();
    // Waiting for the result skips time freely: past the 7-day reminder, to the end of the undo window.
    await handle.result();

    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.closeTime!.getTime() - paidAt).toBeGreaterThanOrEqual(UNDO_WINDOW_MS);
    expect(description.closeTime!.getTime()).toBeGreaterThan(dueAt + 7 * DAY_MS);
    expect(reminded()).toEqual([1]);
  });

  it.each([
    ['cancelled', (handle: WorkflowHandle<typeof invoiceLifecycleWorkflow>) => handle.executeUpdate(cancelUpdate, { args: [{}] }), 'cancelled'],
    ['undone to draft', (handle: WorkflowHandle<typeof invoiceLifecycleWorkflow>) => handle.executeUpdate(undoUpdate), 'draft'],
  ])('when the owed invoice is %s, then its reminders stop', async (_label, change, settledState) => {
    const { handle, dueAt } = await owedInvoice(0);
    await sleepUntil(dueAt + DAY_MS + HOUR_MS);
    expect(await remindedSoon(1)).toEqual([1]);

    expect((await change(handle)).state).toBe(settledState);
    await environment().sleep(30 * DAY_MS);

    expect(reminded()).toEqual([1]);
  });

  it('when an Update arrives while a reminder is awaited, then it runs at once and the schedule goes on from where it was', async () => {
    const { handle, dueAt } = await owedInvoice(0);
    await sleepUntil(dueAt + 2 * DAY_MS);
    expect(await remindedSoon(1)).toEqual([1]);

    expect((await handle.executeUpdate(sendUpdate)).state).toBe('sent');
    expect(await handle.query(lifecycleQuery)).toMatchObject({ state: 'sent', transitions: 2 });

    await sleepUntil(dueAt + 14 * DAY_MS + HOUR_MS);
    expect(await remindedSoon(3)).toEqual([1, 7, 14]);
    // Planned once as raised and once more as sent: the reminder already sent was not sent again.
    expect(fakes.callsOf('invoiceReminderPlan')).toHaveLength(2);
  });

  it('when an invoice is raised after several reminder days have passed, then only the latest of them goes out, then the next on its day', async () => {
    const { dueAt } = await owedInvoice(-10);
    expect(await remindedSoon(1)).toEqual([7]);

    await sleepUntil(dueAt + 14 * DAY_MS - HOUR_MS);
    expect(reminded()).toEqual([7]);
    await sleepUntil(dueAt + 14 * DAY_MS + HOUR_MS);
    expect(await remindedSoon(2)).toEqual([7, 14]);
  });

  it('when a reminder fails for good, then the next one still goes out on its day', async () => {
    fakes.behave('sendInvoiceReminder', async ({ invoiceId, daysAfterDue }) => {
      if (daysAfterDue === 1) throw toApplicationFailure(AppError.conflict('the customer has no contact'));
      remindersSent.set(invoiceId as string, [...(remindersSent.get(invoiceId as string) ?? []), daysAfterDue as number]);
      return 'sent';
    });
    const { dueAt } = await owedInvoice(0);

    await sleepUntil(dueAt + 7 * DAY_MS + HOUR_MS);

    expect(await remindedSoon(2)).toEqual([1, 7]);
    expect(remindersSent.get(`inv_${invoices}`)).toEqual([7]);
  });
});
