import type { PaymentReconciliationActivities, PaymentReconciliationInput } from './payment-reconciliation.types';
import { activitiesOf } from './shared';

const gateway = activitiesOf<PaymentReconciliationActivities>('gatewayCall');

/**
 * Started each day by the organisation's Schedule (`payment-reconciliation:{organisationId}`): compares the
 * gateway's payments of the last days with the attempts recorded here and stores what differs, which
 * `GET /payment-providers/stripe/reconciliation` shows.
 */
export async function paymentReconciliationWorkflow(input: PaymentReconciliationInput): Promise<{ differences: number }> {
  return gateway.reconcilePayments(input);
}
