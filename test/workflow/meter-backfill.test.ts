import { WorkflowFailedError } from '@temporalio/client';
import { AppError, toApplicationFailure } from '../../src/domain/errors';
import type { MeterBackfillActivities } from '../../workflows/meter-backfill.types';
import { meterBackfillWorkflow } from '../../workflows/meter-backfill.workflow';
import { meterBackfillWorkflowId } from '../../workflows/shared';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(60_000);

const fakes = fakeActivities<MeterBackfillActivities>({
  fillMeterBackfillSlice: async () => ({ done: true, status: 'completed', eventsRead: 0 }),
  failMeterBackfill: async () => undefined,
});
const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
beforeEach(() => fakes.reset());

let fills = 0;
function runFill() {
  fills += 1;
  const input = { organisationId: 'org_1', meterId: `mtr_${fills}`, generation: 2 };
  return environment().client.workflow.execute(meterBackfillWorkflow, { taskQueue: TASK_QUEUE, workflowId: meterBackfillWorkflowId(input.meterId, input.generation), args: [input] });
}

describe('meter backfill workflow', () => {
  it('when slices remain, then it fills one after another until one completes the meter', async () => {
    let slices = 0;
    fakes.behave('fillMeterBackfillSlice', async () => {
      slices += 1;
      return slices < 4 ? { done: false, status: 'running', eventsRead: slices * 10 } : { done: true, status: 'completed', eventsRead: 40 };
    });
    expect(await runFill()).toEqual({ status: 'completed' });
    expect(fakes.callsOf('fillMeterBackfillSlice')).toHaveLength(4);
    expect(fakes.callsOf('failMeterBackfill')).toHaveLength(0);
  });

  it('when the meter was redefined meanwhile, then the fill of the old definition ends as superseded', async () => {
    fakes.behave('fillMeterBackfillSlice', async () => ({ done: true, status: 'superseded', eventsRead: 0 }));
    expect(await runFill()).toEqual({ status: 'superseded' });
  });

  it('when more slices remain than one run takes, then it continues as new and still completes', async () => {
    let slices = 0;
    fakes.behave('fillMeterBackfillSlice', async () => {
      slices += 1;
      return slices < 205 ? { done: false, status: 'running', eventsRead: slices } : { done: true, status: 'completed', eventsRead: slices };
    });
    expect(await runFill()).toEqual({ status: 'completed' });
    expect(fakes.callsOf('fillMeterBackfillSlice')).toHaveLength(205);
  });

  it('when a slice fails for good, then the meter is marked failed and the workflow fails, the slice tried once', async () => {
    fakes.behave('fillMeterBackfillSlice', async () => {
      throw toApplicationFailure(AppError.validation('a value does not fit'));
    });
    const failure = await runFill().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(fakes.callsOf('fillMeterBackfillSlice')).toHaveLength(1);
    expect(fakes.callsOf('failMeterBackfill')).toEqual([{ name: 'failMeterBackfill', input: { organisationId: 'org_1', meterId: expect.any(String), generation: 2, error: 'a value does not fit' } }]);
  });
});
