import type { EntitlementPeriodActivities } from '../../workflows/entitlement-period.types';
import { entitlementPeriodWorkflow } from '../../workflows/entitlement-period.workflow';
import { entitlementPeriodWorkflowId } from '../../workflows/ids';
import { TASK_QUEUE, timeSkippingEnvironment, useWorkflowEnvironment } from './support/environment';
import { fakeActivities } from './support/fake-activities';

jest.setTimeout(60_000);

const DAY_MS = 86_400_000;

const fakes = fakeActivities<EntitlementPeriodActivities>({
  entitlementPeriodEnd: async () => null,
  announceEntitlementReset: async () => undefined,
});
const environment = useWorkflowEnvironment(timeSkippingEnvironment, fakes.activities);
beforeEach(() => fakes.reset());

let runs = 0;
function run() {
  runs += 1;
  const input = { organisationId: 'org_1', entitlementId: `etl_${runs}` };
  return environment().client.workflow.execute(entitlementPeriodWorkflow, { taskQueue: TASK_QUEUE, workflowId: entitlementPeriodWorkflowId(input.entitlementId), args: [input] });
}

describe('entitlement period workflow', () => {
  it('when a period ends, then it waits for its end (days, skipped) and announces the next, until the entitlement is gone', async () => {
    // A daily entitlement: each period ends a day after the one before; after three periods it is deleted.
    const first = (await environment().currentTimeMs()) + DAY_MS / 2;
    let announced = 0;
    const seen: number[] = [];
    fakes.behave('entitlementPeriodEnd', async () => (announced < 3 ? new Date(first + announced * DAY_MS).toISOString() : null));
    fakes.behave('announceEntitlementReset', async (input) => {
      seen.push(await environment().currentTimeMs());
      expect(Date.parse(input.periodStart)).toBe(first + announced * DAY_MS);
      announced += 1;
    });
    expect(await run()).toEqual({ ended: true });
    expect(fakes.callsOf('announceEntitlementReset').map((call) => call.input.periodStart)).toEqual([0, 1, 2].map((n) => new Date(first + n * DAY_MS).toISOString()));
    // Each reset came once its period had begun, not before.
    seen.forEach((at, n) => expect(at).toBeGreaterThanOrEqual(first + n * DAY_MS));
  });

  it('when periods were missed (the workflow started late), then it announces each at once, in order', async () => {
    const now = await environment().currentTimeMs();
    let announced = 0;
    fakes.behave('entitlementPeriodEnd', async () => (announced < 2 ? new Date(now - (2 - announced) * DAY_MS).toISOString() : null));
    fakes.behave('announceEntitlementReset', async () => {
      announced += 1;
    });
    expect(await run()).toEqual({ ended: true });
    expect(fakes.callsOf('announceEntitlementReset')).toHaveLength(2);
  });
});
