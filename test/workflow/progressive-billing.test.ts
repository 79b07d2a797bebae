import { WorkflowFailedError } from '@temporalio/client';
import { AppError, toApplicationFailure } from '../../src/domain/errors';
import { progressiveBillingWorkflowId } from '../../workflows/ids';
import { recheckSignal, type ProgressiveBillingActivities } from '../../workflows/progressive-billing.types';
import { progressiveBillingWorkflow } from '../../workflows/progressive-billing.workflow';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(90_000);

const NOTHING = { invoiceIds: [], thresholds: [], periodStart: null };
const fakes = fakeActivities<ProgressiveBillingActivities>({
  billProgressiveThresholds: async () => NOTHING,
  advanceProgressiveInvoices: async (input) => ({ advanced: input.invoiceIds.length }),
});
const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
beforeEach(() => fakes.reset());

let contracts = 0;
/** Starts (or signals) the contract's workflow as the relay's subscriber does, and waits for it to end. */
async function check(contractId = `con_${(contracts += 1)}`) {
  const handle = await environment().client.workflow.signalWithStart(progressiveBillingWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: progressiveBillingWorkflowId(contractId),
    args: [{ organisationId: 'org_1', contractId }],
    signal: recheckSignal,
    signalArgs: [],
  });
  await handle.result();
  return contractId;
}

describe('progressive billing workflow', () => {
  it('when no threshold is crossed, then it checks once and ends without advancing anything', async () => {
    await check();
    expect(fakes.callsOf('billProgressiveThresholds')).toHaveLength(1);
    expect(fakes.callsOf('advanceProgressiveInvoices')).toHaveLength(0);
  });

  it('when a check makes invoices, then they are advanced (the activity decides by the organisation settings)', async () => {
    fakes.behave('billProgressiveThresholds', async () => ({ invoiceIds: ['inv_1'], thresholds: ['100'], periodStart: '2026-11-01' }));
    await check();
    expect(fakes.callsOf('advanceProgressiveInvoices').map((call) => call.input)).toEqual([{ organisationId: 'org_1', invoiceIds: ['inv_1'] }]);
  });

  it('when usage arrives during a check, then it checks again once that check ends; past 100 checks it continues as new and still ends', async () => {
    let checks = 0;
    fakes.behave('billProgressiveThresholds', async (input) => {
      checks += 1;
      // Usage arriving meanwhile: the subscriber signals the running workflow.
      if (checks < 150) await environment().client.workflow.getHandle(progressiveBillingWorkflowId(input.contractId)).signal(recheckSignal);
      return NOTHING;
    });
    await check();
    expect(checks).toBe(150);
  });

  it('when a check fails for good, then it is tried once and the workflow fails', async () => {
    fakes.behave('billProgressiveThresholds', async () => {
      throw toApplicationFailure(AppError.validation('a price cannot be priced'));
    });
    const failure = await check().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(fakes.callsOf('billProgressiveThresholds')).toHaveLength(1);
  });
});
