import type { WorkflowHandle } from '@temporalio/client';
import { fromApplicationFailure } from '../../src/domain/errors';
import { achieveMilestoneUpdate, contractActionUpdates, contractQuery, type ContractActivities } from '../../workflows/contract.types';
import { contractWorkflow } from '../../workflows/contract.workflow';
import { lifecycleQuery } from '../../workflows/invoice-lifecycle.types';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from '../../workflows/search-attributes';
import { contractWorkflowId, invoiceWorkflowId } from '../../workflows/shared';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(30_000);

const fakes = fakeActivities<ContractActivities>({
  setContractStatus: async () => undefined,
  achieveMilestone: async (input) => ({ invoiceId: `inv_for_${String(input.milestoneId)}` }),
});

const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
let contracts = 0;


beforeEach(() => fakes.reset());

async function startContract(): Promise<WorkflowHandle<typeof contractWorkflow>> {
  contracts += 1;
  const contractId = `ctr_${contracts}`;
  return environment().client.workflow.start(contractWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: contractWorkflowId(contractId),
    args: [{ contractId, organisationId: 'org_1', customerId: 'cus_1' }],
  });
}

async function acceptedUpdates(handle: WorkflowHandle): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes).length;
}

describe('the contract workflow', () => {
  it('when an illegal transition is asked, then the validator refuses it: nothing runs, nothing is recorded', async () => {
    const handle = await startContract();

    const error = fromApplicationFailure(await handle.executeUpdate(contractActionUpdates.suspend).catch((reason: unknown) => reason));

    expect([error?.kind, error?.message]).toEqual(['conflict', 'cannot suspend a contract that is draft']);
    expect(error?.items).toEqual([{ code: 1003, message: 'cannot suspend a contract that is draft' }]);
    expect(fakes.calls).toEqual([]);
    expect(await acceptedUpdates(handle)).toBe(0);
    expect(await handle.query(contractQuery)).toEqual({ state: 'draft', allowedActions: ['activate', 'terminate'] });
  });

  it('when a legal transition is asked, then its status is written and the workflow ends with a final state', async () => {
    const handle = await startContract();

    expect(await handle.executeUpdate(contractActionUpdates.activate)).toEqual({ state: 'active', allowedActions: ['suspend', 'end', 'terminate'] });
    await handle.executeUpdate(contractActionUpdates.end);

    expect(await handle.result()).toBe('ended');
    expect(fakes.calls.map((call) => [call.input.from, call.input.to])).toEqual([
      ['draft', 'active'],
      ['active', 'ended'],
    ]);
  });

  it('when a milestone is achieved, then its draft invoice gets a lifecycle workflow found by the contract\'s search attributes', async () => {
    const handle = await startContract();
    const refused = fromApplicationFailure(await handle.executeUpdate(achieveMilestoneUpdate, { args: [{ milestoneId: 'ms_0' }] }).catch((reason: unknown) => reason));
    expect(refused?.kind).toBe('conflict');

    await handle.executeUpdate(contractActionUpdates.activate);
    expect(await handle.executeUpdate(achieveMilestoneUpdate, { args: [{ milestoneId: 'ms_1' }] })).toEqual({ invoiceId: 'inv_for_ms_1' });
    // Achieved twice: the first invoice's lifecycle is found, not started again.
    expect(await handle.executeUpdate(achieveMilestoneUpdate, { args: [{ milestoneId: 'ms_1' }] })).toEqual({ invoiceId: 'inv_for_ms_1' });

    const invoice = environment().client.workflow.getHandle(invoiceWorkflowId('inv_for_ms_1'));
    expect(await invoice.query(lifecycleQuery)).toMatchObject({ state: 'draft' });
    const attributes = (await invoice.describe()).typedSearchAttributes;
    expect([attributes.get(OrganisationIdKey), attributes.get(CustomerIdKey), attributes.get(ContractIdKey)]).toEqual(['org_1', 'cus_1', 'ctr_3']);
  });
});
