import { continueAsNew, sleep } from '@temporalio/workflow';
import type { EntitlementPeriodActivities, EntitlementPeriodInput } from './entitlement-period.types';
import { activitiesOf } from './shared';

const bookkeeping = activitiesOf<EntitlementPeriodActivities>('bookkeeping');

/** Periods per run: a daily entitlement continues as new about once a month, keeping its history short. */
const PERIODS_PER_RUN = 30;

/**
 * One per metered entitlement: a durable timer to the end of its usage period, then the next period's
 * reset announced (`entitlement.reset`), period after period until the entitlement is deleted. The period
 * last announced is kept on the entitlement in Postgres, so a lost or restarted workflow catches up on the
 * periods it missed and never announces one twice.
 */
export async function entitlementPeriodWorkflow(input: EntitlementPeriodInput): Promise<{ ended: true }> {
  for (let period = 0; period < PERIODS_PER_RUN; period += 1) {
    const end = await bookkeeping.entitlementPeriodEnd(input);
    if (end === null) return { ended: true };
    const wait = Date.parse(end) - Date.now();
    if (wait > 0) await sleep(wait);
    await bookkeeping.announceEntitlementReset({ ...input, periodStart: end });
  }
  return continueAsNew<typeof entitlementPeriodWorkflow>(input);
}
