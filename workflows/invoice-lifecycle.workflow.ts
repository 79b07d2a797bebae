import {
  condition,
  continueAsNew,
  deprecatePatch,
  log,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { allowedActions, isSettled, planAction, targetOf, type InvoiceAction, type InvoiceState, type InvoiceStep } from '../src/domain/invoice-state';
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
  type RecordedTransition,
} from './invoice-lifecycle.types';
import { InvoiceNumberKey } from './search-attributes';
import { fromApplicationFailure } from '../src/domain/errors';
import { activitiesOf, conflict, idle, localActivitiesOf, Mutex } from './shared';

const activities = activitiesOf<InvoiceActivities>('invoiceStep');
/** The steps of an invoice Update and their undo, run inside the workflow task (see LOCAL_ACTIVITY_PROFILES). */
const invoiceStepLocalActivities = localActivitiesOf<InvoiceActivities>('invoiceStep');
const bookkeepingActivities = activitiesOf<Pick<InvoiceActivities, 'invoiceUndoWindow' | 'invoiceSnapshot'>>('bookkeeping');

/**
 * Histories recorded before a refused step reloaded the state from Postgres. Deprecated (see "Workflow patches"
 * in docs/operations.md): every step refused as a conflict reloads; the marker is still written, so that a
 * worker of the release before this one replays what this one records. Remove the call once no run that
 * recorded the marker without `deprecated` can still be open.
 */
export const RESYNC_PATCH = 'refused-steps-reload-state-from-postgres';

/** Histories recorded before settled invoices completed never asked for their undo window. */
export const UNDO_WINDOW_PATCH = 'settled-invoices-complete-after-undo-window';

/** Histories recorded before owed invoices were reminded never asked for a reminder plan. */
export const REMINDERS_PATCH = 'owed-invoices-remind-after-due-date';

/** Histories recorded before the steps of an Update ran as local activities scheduled regular ones. */
export const LOCAL_STEPS_PATCH = 'invoice-steps-run-as-local-activities';

/**
 * Histories recorded before a refused step whose number Postgres had already given out (the state and undo
 * stack as remembered, the numbers behind) reloaded and planned again; they gave up with the refusal.
 */
export const STALE_SEQ_PATCH = 'refused-steps-reload-when-numbers-are-behind';

const DAY_MS = 24 * 60 * 60 * 1000;

/** What a step may need beyond its invoice: the paid date (and collecting attempt) of a payment, a cancellation's comments. */
type StepArgs = { paidDate?: string; collectedAttemptId?: string; comments?: string };

/** Raised or sent: the invoice waits for its payment. */
const isOwed = (state: InvoiceState) => state === 'raised' || state === 'sent';

/** A plan made before zones were read: a reminder at the start (UTC) of the day the invoice becomes that many days overdue. */
const reminderTime = (dueDate: string, daysAfterDue: number) => Date.parse(`${dueDate}T00:00:00Z`) + daysAfterDue * DAY_MS;

/**
 * One workflow per invoice holds its state. Each Update runs its steps' activities one transition at a
 * time, recording each step right after it succeeds so that `undo` can run its inverse.
 */
export async function invoiceLifecycleWorkflow(input: InvoiceLifecycleInput): Promise<void> {
  const { invoiceId, organisationId } = input;
  let state: InvoiceState = input.carried?.state ?? 'draft';
  const transitions: RecordedTransition[] = [...(input.carried?.transitions ?? [])];
  let nextSeq = input.carried?.nextSeq ?? 1;
  const lock = new Mutex();

  const view = (): LifecycleView => ({ state, allowedActions: allowedActions(state, transitions.length), transitions: transitions.length });

  /** Updates queue behind each other: a transition sees the state the previous one left. */
  async function exclusive(work: () => Promise<void>): Promise<LifecycleView> {
    return lock.runExclusive(async () => {
      await work();
      return view();
    });
  }

  /**
   * Where an Update's steps run: inside the workflow task, as local activities, so that a transition costs
   * one round trip through the server; each step is one idempotent transaction keyed by its seq, so a
   * workflow task that is retried (a worker lost mid-step) runs it again safely.
   */
  const stepActivities = () => (patched(LOCAL_STEPS_PATCH) ? invoiceStepLocalActivities : activities);

  /**
   * The failures a step's activity answered, as opposed to the workflow's own refusals: a regular
   * activity's come wrapped in an ActivityFailure, a local activity's as the activity threw them.
   */
  const stepFailures = new WeakSet<object>();
  /** The number the latest step ran under, refused or not. */
  let attemptedSeq: number | undefined;
  async function asStep(work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (typeof error === 'object' && error !== null) stepFailures.add(error);
      throw error;
    }
  }

  async function applyStep(step: InvoiceStep, args: StepArgs): Promise<void> {
    const base = { invoiceId, organisationId, seq: nextSeq, from: state };
    attemptedSeq = base.seq;
    nextSeq += 1;
    const activities = stepActivities();
    await asStep(async () => {
      switch (step) {
        case 'raise': {
          const { number } = await activities.raiseInvoice(base);
          upsertSearchAttributes([{ key: InvoiceNumberKey, value: number }]);
          break;
        }
        case 'send':
          await activities.sendInvoice(base);
          break;
        case 'pay':
          await activities.payInvoice({ ...base, paidDate: args.paidDate!, ...(args.collectedAttemptId ? { collectedAttemptId: args.collectedAttemptId } : {}) });
          break;
        case 'cancel':
          await activities.cancelInvoice({ ...base, comments: args.comments });
          break;
      }
    });
    transitions.push({ seq: base.seq, step, from: base.from, to: targetOf(step) });
    state = targetOf(step);
  }

  async function runPlan(action: Exclude<InvoiceAction, 'undo'>, args: StepArgs): Promise<void> {
    const plan = planAction(state, action);
    if (!plan.ok) throw conflict(plan.reason);
    for (const step of plan.steps) await applyStep(step, args);
  }

  /**
   * Postgres is the source of truth: a step that the database refused as a conflict may mean this
   * workflow's memory fell behind it (it was reset from the Temporal UI to an earlier point). Reload the
   * state and the undo stack once, and say whether they differed. Transition numbers only ever grow.
   */
  async function resynced(error: unknown): Promise<boolean> {
    const refusedByStep = typeof error === 'object' && error !== null && stepFailures.has(error) && fromApplicationFailure(error)?.kind === 'conflict';
    if (!refusedByStep) return false;
    deprecatePatch(RESYNC_PATCH);
    const recorded = await bookkeepingActivities.invoiceSnapshot({ invoiceId, organisationId });
    const sameStack = recorded.transitions.length === transitions.length && recorded.transitions.every((t, i) => t.seq === transitions[i]!.seq);
    // The same state and stack, but the step was refused under a number Postgres gave a transition undone
    // since (done and undone before a reset forgot both): planning again under the next number goes through.
    const numbersBehind = attemptedSeq !== undefined && attemptedSeq < recorded.nextSeq && !recorded.transitions.some((t) => t.seq === attemptedSeq);
    if (recorded.state === state && sameStack && !(numbersBehind && patched(STALE_SEQ_PATCH))) return false;
    state = recorded.state;
    transitions.splice(0, transitions.length, ...recorded.transitions);
    nextSeq = Math.max(nextSeq, recorded.nextSeq);
    return true;
  }

  /** Runs `work`; if it is refused because memory lagged Postgres, runs it once more on the reloaded state. */
  function againstRecordedState(work: () => Promise<void>): Promise<LifecycleView> {
    return exclusive(async () => {
      try {
        await work();
      } catch (error) {
        if (!(await resynced(error))) throw error;
        await work();
      }
    });
  }

  function run(action: Exclude<InvoiceAction, 'undo'>, args: StepArgs = {}) {
    return againstRecordedState(() => runPlan(action, args));
  }

  /** Rejects an illegal transition before the Update is accepted; nothing runs, nothing is recorded. */
  function validate(action: Exclude<InvoiceAction, 'undo'>) {
    return <Args extends unknown[]>(..._args: Args): void => {
      const plan = planAction(state, action);
      if (!plan.ok) throw conflict(plan.reason);
    };
  }

  async function undoLatest(): Promise<void> {
    const latest = transitions.at(-1);
    if (!latest) throw conflict('nothing to undo');
    const args = { invoiceId, organisationId, seq: latest.seq, from: latest.from };
    const activities = stepActivities();
    await asStep(async () => {
      switch (latest.step) {
        case 'raise':
          await activities.unraiseInvoice(args);
          break;
        case 'send':
          await activities.unsendInvoice(args);
          break;
        case 'pay':
          await activities.unpayInvoice(args);
          break;
        case 'cancel':
          await activities.uncancelInvoice(args);
          break;
      }
    });
    transitions.pop();
    state = latest.from;
  }

  setHandler(lifecycleQuery, view);
  setHandler(raiseUpdate, () => run('raise'), { validator: validate('raise') });
  setHandler(sendUpdate, () => run('send'), { validator: validate('send') });
  setHandler(markPaidUpdate, ({ paidDate, collectedAttemptId }) => run('markPaid', { paidDate, ...(collectedAttemptId ? { collectedAttemptId } : {}) }), { validator: validate('markPaid') });
  setHandler(cancelUpdate, ({ comments }) => run('cancel', { comments }), { validator: validate('cancel') });
  setHandler(undoUpdate, () => againstRecordedState(undoLatest), {
    validator: () => {
      if (transitions.length === 0) throw conflict('nothing to undo');
    },
  });

  const continueAsNewDue = () => workflowInfo().continueAsNewSuggested && idle(lock);

  /**
   * An owed invoice waits for its payment and gets the reminders still ahead, each at its time on a durable
   * timer. The plan comes from Postgres, so a reminder an earlier run sent is not sent again; of several
   * whose time has passed (the invoice was raised late, the worker was away), only the latest goes out.
   * Anything that happens (an Update, a suggested continue-as-new) ends the wait at once, and the caller
   * plans again from the new state.
   */
  async function awaitPayment(): Promise<void> {
    const awaited = state;
    const disturbed = () => state !== awaited || !idle(lock) || continueAsNewDue();
    // Histories recorded before reminders existed only waited.
    if (!patched(REMINDERS_PATCH)) {
      await condition(disturbed);
      return;
    }
    const plan = await unlessDisturbed(activities.invoiceReminderPlan({ invoiceId, organisationId }), disturbed);
    if (plan?.dueDate) {
      const { dueDate } = plan;
      let ahead = plan.daysAfterDue.map((days, i) => ({ days, at: plan.sendAt?.[i] ?? reminderTime(dueDate, days) }));
      while (ahead.length > 0) {
        const passed = ahead.filter((reminder) => reminder.at <= Date.now());
        if (passed.length === 0) {
          if (await condition(disturbed, ahead[0]!.at - Date.now())) return;
          continue;
        }
        const latest = passed.at(-1)!;
        ahead = ahead.filter((reminder) => reminder.at > latest.at);
        // Awaited to its end, whatever arrives meanwhile (Updates run beside it): it is sent once.
        await activities.sendInvoiceReminder({ invoiceId, organisationId, daysAfterDue: latest.days }).catch((error: unknown) => {
          log.warn('an invoice reminder failed; the next one is still due', { invoiceId, daysAfterDue: latest.days, error: String(error) });
        });
      }
    }
    await condition(disturbed);
  }

  /**
   * The activity's result, or undefined once `disturbed` (the activity is left to finish unheeded) or if
   * it failed for good. Cancelling it instead would race its completion.
   */
  async function unlessDisturbed<T>(activity: Promise<T>, disturbed: () => boolean): Promise<T | undefined> {
    let outcome: { value: T } | { failed: unknown } | undefined;
    activity.then(
      (value) => (outcome = { value }),
      (failed: unknown) => (outcome = { failed }),
    );
    await condition(() => outcome !== undefined || disturbed());
    if (outcome && 'failed' in outcome) log.warn('invoice reminders wait for the next change of the invoice', { invoiceId, error: String(outcome.failed) });
    return outcome && 'value' in outcome ? outcome.value : undefined;
  }

  // An owed invoice waits for its payment, reminded on schedule. A paid or cancelled invoice completes
  // once its undo window has passed with nothing happening: the Temporal UI's Running list holds only
  // invoices with work ahead. A later Update starts a new run from the state Postgres records. A long
  // history continues as new with its state.
  for (;;) {
    await condition(() => continueAsNewDue() || (idle(lock) && (isSettled(state) || isOwed(state))));
    if (continueAsNewDue()) break;
    if (isOwed(state)) {
      await awaitPayment();
      continue;
    }
    if (!patched(UNDO_WINDOW_PATCH)) {
      await condition(continueAsNewDue);
      break;
    }
    // At least a second, so that a window of 0 days still lets a racing Update land first.
    const undoWindowMs = Math.max(1_000, await bookkeepingActivities.invoiceUndoWindow({ organisationId }));
    const settledState = state;
    const disturbed = await condition(() => state !== settledState || !idle(lock) || continueAsNewDue(), undoWindowMs);
    if (!disturbed) return;
  }
  await continueAsNew<typeof invoiceLifecycleWorkflow>({ invoiceId, organisationId, carried: { state, transitions, nextSeq } });
}
