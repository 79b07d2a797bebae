import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { ContractAction, ContractState } from '../src/domain/contract-state';

/** The contract of `contractWorkflow`: its input, its Updates and Query, and its activities. */

export interface ContractWorkflowInput {
  contractId: string;
  organisationId: string;
  customerId: string;
  state?: ContractState;
}

export interface ContractView {
  state: ContractState;
  allowedActions: ContractAction[];
}

/** What the old plan's in-advance fee had paid for the days from the change on, credited by the next invoice. */
export interface PlanChangeCredit {
  planItemId: string;
  title: string;
  invoiceId: string;
  invoiceItemId: string;
  periodFrom: string;
  periodTo: string;
  from: string;
  to: string;
  days: number;
  periodDays: number;
  amount: string;
}

/** A plan change as recorded (the API's plan change). */
export interface PlanChange {
  id: string;
  contractId: string;
  fromContractPlanId: string | null;
  toContractPlanId: string | null;
  toPlanId: string;
  effectiveDate: string;
  prorate: boolean;
  status: 'pending' | 'settled' | 'undone';
  credits: PlanChangeCredit[];
  settledInvoiceId: string | null;
  creditedToBalance: string | null;
  settledAt: string | null;
  undoneAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A plan change as the Update asks for it: the contract is the workflow's. */
export interface PlanChangeRequest {
  /** Chosen before the step runs, so that a retried step finds the change it made. */
  planChangeId: string;
  fromContractPlanId: string;
  toPlanId: string;
  effectiveDate: string;
  prorate: boolean;
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
/** A plan change and its undo: the change as recorded (see `PlanChange`). */
export const changePlanUpdate = defineUpdate<PlanChange, [PlanChangeRequest]>('changePlan');
export const undoPlanChangeUpdate = defineUpdate<PlanChange, [{ planChangeId: string }]>('undoPlanChange');
export const contractQuery = defineQuery<ContractView>('contract');

export interface ContractOwner {
  organisationId: string;
  contractId: string;
}

export interface ContractActivities {
  setContractStatus(input: ContractOwner & { from: ContractState; to: ContractState }): Promise<void>;
  /** Records the milestone achieved and its draft invoice, whose lifecycle the workflow then starts. */
  achieveMilestone(input: ContractOwner & { milestoneId: string }): Promise<{ invoiceId: string }>;
  changePlan(input: ContractOwner & PlanChangeRequest): Promise<PlanChange>;
  undoPlanChange(input: ContractOwner & { planChangeId: string }): Promise<PlanChange>;
}
