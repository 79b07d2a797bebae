import { sleep } from '@temporalio/workflow';
import type { CreditActivities, CreditExpiryInput } from './credit-expiry.types';
import { activitiesOf } from './shared';

const creditActivities = activitiesOf<CreditActivities>('bookkeeping');

/**
 * One per credit lot that expires: a durable timer to its expiry, then what is left of the lot leaves the
 * balance (an `expiry` entry). The timer survives restarts of workers and servers; the step does nothing
 * if the lot was spent meanwhile, and credit taken after the expiry never touches the lot, as every take
 * expires due lots first.
 */
export async function creditExpiryWorkflow(input: CreditExpiryInput): Promise<{ expired: string }> {
  const wait = Date.parse(input.expiresAt) - Date.now();
  if (wait > 0) await sleep(wait);
  return creditActivities.expireCreditLot({ organisationId: input.organisationId, lotId: input.lotId, asOf: input.expiresAt });
}
