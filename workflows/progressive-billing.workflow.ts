import { continueAsNew, setHandler } from '@temporalio/workflow';
import { recheckSignal, type ProgressiveBillingActivities, type ProgressiveBillingInput } from './progressive-billing.types';
import { activitiesOf } from './shared';

const checks = activitiesOf<Pick<ProgressiveBillingActivities, 'billProgressiveThresholds'>>('transition');
const advancing = activitiesOf<Pick<ProgressiveBillingActivities, 'advanceProgressiveInvoices'>>('billing');

/** Checks a run makes before it continues as new, so that its history stays small under steady usage. */
const CHECKS_PER_RUN = 100;

/**
 * Progressive billing of one contract (`progressive-billing:{contractId}`): started, or signalled when it
 * already runs, by the event relay when usage of the contract's customer is ingested. It checks the
 * contract's thresholds and bills those crossed, once more for every signal that came meanwhile, then
 * ends. The claims in Postgres, not this workflow, make each threshold billed once.
 */
export async function progressiveBillingWorkflow(input: ProgressiveBillingInput): Promise<void> {
  let again = true;
  setHandler(recheckSignal, () => {
    again = true;
  });
  let made = input.checks ?? 0;
  while (again) {
    if (made - (input.checks ?? 0) >= CHECKS_PER_RUN) return continueAsNew<typeof progressiveBillingWorkflow>({ ...input, checks: made });
    again = false;
    made += 1;
    const outcome = await checks.billProgressiveThresholds({ organisationId: input.organisationId, contractId: input.contractId });
    if (outcome.invoiceIds.length > 0) await advancing.advanceProgressiveInvoices({ organisationId: input.organisationId, invoiceIds: outcome.invoiceIds });
  }
}
