import { condition, continueAsNew, defineQuery, defineUpdate, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { allowedActions, planAction, targetOf, type InvoiceAction, type InvoiceState, type InvoiceStep } from '../src/domain/invoice-state';
import type { InvoiceLifecycleInput, LifecycleView, RecordedTransition } from './invoice-lifecycle.types';
import { InvoiceNumberKey } from './search-attributes';
import { conflict, idle, invoiceStepActivities as activities, Mutex } from './shared';

// Update names are stored in histories: renaming one is a breaking change.
export const raiseUpdate = defineUpdate<LifecycleView>('raise');
export const sendUpdate = defineUpdate<LifecycleView>('send');
export const markPaidUpdate = defineUpdate<LifecycleView, [{ paidDate: string }]>('markPaid');
export const cancelUpdate = defineUpdate<LifecycleView, [{ comments?: string }]>('cancel');
export const undoUpdate = defineUpdate<LifecycleView>('undo');
export const lifecycleQuery = defineQuery<LifecycleView>('lifecycle');

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

  async function applyStep(step: InvoiceStep, args: { paidDate?: string; comments?: string }): Promise<void> {
    const base = { invoiceId, organisationId, seq: nextSeq, from: state };
    nextSeq += 1;
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
        await activities.payInvoice({ ...base, paidDate: args.paidDate! });
        break;
      case 'cancel':
        await activities.cancelInvoice({ ...base, comments: args.comments });
        break;
    }
    transitions.push({ seq: base.seq, step, from: base.from, to: targetOf(step) });
    state = targetOf(step);
  }

  function run(action: Exclude<InvoiceAction, 'undo'>, args: { paidDate?: string; comments?: string } = {}) {
    return exclusive(async () => {
      const plan = planAction(state, action);
      if (!plan.ok) throw conflict(plan.reason);
      for (const step of plan.steps) await applyStep(step, args);
    });
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
    transitions.pop();
    state = latest.from;
  }

  setHandler(lifecycleQuery, view);
  setHandler(raiseUpdate, () => run('raise'), { validator: validate('raise') });
  setHandler(sendUpdate, () => run('send'), { validator: validate('send') });
  setHandler(markPaidUpdate, ({ paidDate }) => run('markPaid', { paidDate }), { validator: validate('markPaid') });
  setHandler(cancelUpdate, ({ comments }) => run('cancel', { comments }), { validator: validate('cancel') });
  setHandler(undoUpdate, () => exclusive(undoLatest), {
    validator: () => {
      if (transitions.length === 0) throw conflict('nothing to undo');
    },
  });

  // An invoice lives as long as it can be undone; a long history continues as new with its state.
  await condition(() => workflowInfo().continueAsNewSuggested && idle(lock));
  await continueAsNew<typeof invoiceLifecycleWorkflow>({ invoiceId, organisationId, carried: { state, transitions, nextSeq } });
}
