import { WithStartWorkflowOperation } from '@temporalio/client';
import type { AppDeps } from '../../deps';
import { isCurrency } from '../../domain/currencies';
import { CONTRACT_STATES, allowedContractActions, type ContractAction } from '../../domain/contract-state';
import { AppError } from '../../domain/errors';
import {
  achieveMilestoneUpdate,
  contractActionUpdates,
  contractWorkflow,
  contractWorkflowId,
} from '../../../workflows/contract.workflow';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from '../../../workflows/search-attributes';
import { createContractRepository } from './contracts.repository';

type Contract = NonNullable<Awaited<ReturnType<ReturnType<typeof createContractRepository>['find']>>>;

/** The contract's lifecycle runs in its workflow; every other field is plain data. */
export function createContractService(deps: Pick<AppDeps, 'db' | 'temporal'>) {
  const contracts = createContractRepository(deps.db);
  const { client, taskQueue } = deps.temporal;

  function startOptions(organisationId: string, contract: Contract) {
    return {
      workflowId: contractWorkflowId(contract.id),
      taskQueue,
      args: [{ contractId: contract.id, organisationId, customerId: contract.customerId }] as Parameters<typeof contractWorkflow>,
      typedSearchAttributes: [
        { key: OrganisationIdKey, value: organisationId },
        { key: CustomerIdKey, value: contract.customerId },
        { key: ContractIdKey, value: contract.id },
      ],
    };
  }

  async function requireContract(organisationId: string, id: string): Promise<Contract> {
    const contract = await contracts.find(organisationId, id);
    if (!contract) throw AppError.notFound('Contract');
    return contract;
  }

  /** A contract that has ended has no workflow left to ask: refuse instead of starting a new one. */
  function assertOpen(contract: Contract, what: string): void {
    if (contract.status === 'ended' || contract.status === 'terminated') throw AppError.conflict(`cannot ${what} a contract that is ${contract.status}`);
  }

  return {
    contracts,
    requireContract,

    async create(organisationId: string, input: Parameters<typeof contracts.create>[1]): Promise<Contract> {
      if (!isCurrency(input.currency)) throw AppError.validation(`${input.currency} is not an ISO 4217 currency`, 'body.currency');
      const customer = await deps.db('customers').where({ organisation_id: organisationId, id: input.customerId }).whereNull('deleted_at').first('id');
      if (!customer) throw AppError.notFound('Customer');
      const planIds = [...new Set(input.plans.map((plan) => plan.planId))];
      const found = await deps.db('billing_plans').where({ organisation_id: organisationId }).whereIn('id', planIds).pluck('id');
      if (found.length !== planIds.length) throw AppError.notFound('Billing plan');
      const contract = await contracts.create(organisationId, input);
      await client.workflow.start(contractWorkflow, { ...startOptions(organisationId, contract), workflowIdConflictPolicy: 'USE_EXISTING' });
      return contract;
    },

    async transition(organisationId: string, id: string, action: ContractAction): Promise<Contract> {
      const contract = await requireContract(organisationId, id);
      assertOpen(contract, action);
      await client.workflow.executeUpdateWithStart(contractActionUpdates[action], {
        startWorkflowOperation: new WithStartWorkflowOperation(contractWorkflow, { ...startOptions(organisationId, contract), workflowIdConflictPolicy: 'USE_EXISTING' }),
      });
      return requireContract(organisationId, id);
    },

    async achieveMilestone(organisationId: string, contractId: string, milestoneId: string): Promise<string> {
      const contract = await requireContract(organisationId, contractId);
      assertOpen(contract, 'achieve milestones of');
      const { invoiceId } = await client.workflow.executeUpdateWithStart(achieveMilestoneUpdate, {
        args: [{ milestoneId }],
        startWorkflowOperation: new WithStartWorkflowOperation(contractWorkflow, { ...startOptions(organisationId, contract), workflowIdConflictPolicy: 'USE_EXISTING' }),
      });
      return invoiceId;
    },

    async lifecycle(organisationId: string, id: string) {
      const contract = await requireContract(organisationId, id);
      return { state: contract.status, states: [...CONTRACT_STATES], allowedActions: allowedContractActions(contract.status), transitions: 0 };
    },
  };
}

export type ContractService = ReturnType<typeof createContractService>;
