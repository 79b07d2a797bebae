import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ContractActivities } from '../activities/contracts.activities';
import { allowedContractActions, contractTransition, isFinal, type ContractAction, type ContractState } from '../src/domain/contract-state';
import { BUSINESS_FAILURE_TYPES } from '../src/domain/errors';
import { invoiceWorkflowId } from './invoice-ids';
import { invoiceLifecycleWorkflow } from './invoice-lifecycle.workflow';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from './search-attributes';

export const contractWorkflowId = (contractId: string) => `contract:${contractId}`;

export interface ContractView {
  state: ContractState;
  allowedActions: ContractAction[];
}

// Names are stored in histories: renaming one is a breaking change.
export const contractActionUpdates: Record<ContractAction, ReturnType<typeof defineUpdate<ContractView>>> = {
  activate: defineUpdate<ContractView>('activate'),
  suspend: defineUpdate<ContractView>('suspend'),
  resume: defineUpdate<ContractView>('resume'),
  end: defineUpdate<ContractView>('end'),
  terminate: defineUpdate<ContractView>('terminate'),
};
export const achieveMilestoneUpdate = defineUpdate<{ invoiceId: string }, [{ milestoneId: string }]>('achieveMilestone');
export const contractQuery = defineQuery<ContractView>('contract');

const activities = proxyActivities<ContractActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '10 seconds', nonRetryableErrorTypes: BUSINESS_FAILURE_TYPES },
});

function conflict(message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'conflict', message, nonRetryable: true, details: [[{ code: 1003, message }]] });
}

export interface ContractWorkflowInput {
  contractId: string;
  organisationId: string;
  customerId: string;
  state?: ContractState;
}

/**
 * One workflow per contract owns its lifecycle. Transitions are Updates whose validators refuse an illegal
 * move before anything runs; an achieved milestone becomes a draft invoice with its own lifecycle.
 * The workflow ends with the contract; invoices it started live on.
 */
export async function contractWorkflow(input: ContractWorkflowInput): Promise<ContractState> {
  let state: ContractState = input.state ?? 'draft';
  let busy = false;
  const view = (): ContractView => ({ state, allowedActions: allowedContractActions(state) });

  async function exclusive<T>(work: () => Promise<T>): Promise<T> {
    // Re-check after every wake-up: handlers woken together must not all claim the turn.
    while (busy) await condition(() => !busy);
    busy = true;
    try {
      return await work();
    } finally {
      busy = false;
    }
  }

  for (const action of Object.keys(contractActionUpdates) as ContractAction[]) {
    setHandler(
      contractActionUpdates[action],
      () =>
        exclusive(async () => {
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
      exclusive(async () => {
        const { invoiceId } = await activities.achieveMilestone({ organisationId: input.organisationId, contractId: input.contractId, milestoneId });
        try {
          await startChild(invoiceLifecycleWorkflow, {
            workflowId: invoiceWorkflowId(invoiceId),
            args: [{ invoiceId, organisationId: input.organisationId }],
            parentClosePolicy: ParentClosePolicy.ABANDON,
            typedSearchAttributes: [
              { key: OrganisationIdKey, value: input.organisationId },
              { key: CustomerIdKey, value: input.customerId },
              { key: ContractIdKey, value: input.contractId },
            ],
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
  setHandler(contractQuery, view);

  await condition(() => (isFinal(state) || workflowInfo().continueAsNewSuggested) && !busy && allHandlersFinished());
  if (isFinal(state)) return state;
  return continueAsNew<typeof contractWorkflow>({ ...input, state });
}
