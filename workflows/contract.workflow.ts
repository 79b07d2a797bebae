import { condition, continueAsNew, ParentClosePolicy, setHandler, startChild, workflowInfo } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { allowedContractActions, contractTransition, isFinal, type ContractAction, type ContractState } from '../src/domain/contract-state';
import {
  achieveMilestoneUpdate,
  changePlanUpdate,
  contractActionUpdates,
  contractQuery,
  undoPlanChangeUpdate,
  type ContractActivities,
  type ContractView,
  type ContractWorkflowInput,
  type PlanChangeRequest,
} from './contract.types';
import { invoiceLifecycleWorkflow } from './invoice-lifecycle.workflow';
import { activitiesOf, conflict, idle, invoiceWorkflowId, Mutex, searchAttributes } from './shared';

const activities = activitiesOf<ContractActivities>('transition');

/**
 * One workflow per contract owns its lifecycle. Transitions are Updates whose validators refuse an illegal
 * move before anything runs; an achieved milestone becomes a draft invoice with its own lifecycle.
 * The workflow ends with the contract; invoices it started live on.
 */
export async function contractWorkflow(input: ContractWorkflowInput): Promise<ContractState> {
  let state: ContractState = input.state ?? 'draft';
  // Transitions queue behind each other: each sees the state the previous one left.
  const lock = new Mutex();
  const view = (): ContractView => ({ state, allowedActions: allowedContractActions(state) });

  for (const action of Object.keys(contractActionUpdates) as ContractAction[]) {
    setHandler(
      contractActionUpdates[action],
      () =>
        lock.runExclusive(async () => {
          const next = contractTransition(state, action);
          if (!next.ok) throw conflict(next.reason);
          await activities.setContractStatus({ organisationId: input.organisationId, contractId: input.contractId, from: state, to: next.to });
          state = next.to;
          return view();
        }),
      {
        validator: () => {
          const next = contractTransition(state, action);
          if (!next.ok) throw conflict(next.reason);
        },
      },
    );
  }

  setHandler(
    achieveMilestoneUpdate,
    ({ milestoneId }) =>
      lock.runExclusive(async () => {
        const { invoiceId } = await activities.achieveMilestone({ organisationId: input.organisationId, contractId: input.contractId, milestoneId });
        try {
          await startChild(invoiceLifecycleWorkflow, {
            workflowId: invoiceWorkflowId(invoiceId),
            args: [{ invoiceId, organisationId: input.organisationId }],
            parentClosePolicy: ParentClosePolicy.ABANDON,
            ...searchAttributes({ organisationId: input.organisationId, customerId: input.customerId, contractId: input.contractId }, 'invoiceLifecycleWorkflow'),
          });
        } catch (error) {
          // Achieving twice finds the invoice of the first time, whose lifecycle already runs.
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
        return { invoiceId };
      }),
    {
      validator: (_input: { milestoneId: string }) => {
        if (state !== 'active') throw conflict(`milestones are achieved on active contracts; this one is ${state}`);
      },
    },
  );
  // A plan change waits behind transitions and milestones, so that each sees the contract the last one left.
  const open = () => {
    if (isFinal(state)) throw conflict(`cannot change the plans of a contract that is ${state}`);
  };
  const owner = { organisationId: input.organisationId, contractId: input.contractId };
  setHandler(changePlanUpdate, (request) => lock.runExclusive(() => activities.changePlan({ ...request, ...owner })), { validator: (_request: PlanChangeRequest) => open() });
  setHandler(undoPlanChangeUpdate, ({ planChangeId }) => lock.runExclusive(() => activities.undoPlanChange({ planChangeId, ...owner })), {
    validator: (_undo: { planChangeId: string }) => open(),
  });
  setHandler(contractQuery, view);

  await condition(() => (isFinal(state) || workflowInfo().continueAsNewSuggested) && idle(lock));
  if (isFinal(state)) return state;
  return continueAsNew<typeof contractWorkflow>({ ...input, state });
}
