import type { InvoiceService } from '../src/modules/invoices';
import { AppError } from '../src/domain/errors';
import type { Services } from '../src/services';
import type { CollectionActivities } from '../workflows/invoice-collection.types';
import type { GatewayRefundActivities } from '../workflows/gateway-refund.types';
import type { PaymentReconciliationActivities } from '../workflows/payment-reconciliation.types';
import { withHeartbeat } from './adapter';

export function createPaymentActivities(services: Services, drivers: { invoices: InvoiceService }): CollectionActivities & GatewayRefundActivities & PaymentReconciliationActivities {
  const { collection } = services;
  return {
    nextCollectionStep: (input) => collection.nextStep(input),
    chargeCollectionAttempt: (input) => withHeartbeat(() => collection.charge(input)),
    refreshCollectionAttempt: (input) => withHeartbeat(() => collection.refresh(input)),
    refundThroughGateway: (input) => withHeartbeat(() => collection.refund(input)),
    reconcilePayments: async (input) => ({ differences: (await withHeartbeat(() => services.paymentGateway.runReconciliation(input.organisationId, input.days))).differences.length }),
    /**
     * Through the invoice's own workflow, keyed by the attempt: a retry joins the first Update. An invoice
     * no longer owed (paid by other means meanwhile) refuses it; the next step says what became of the money.
     */
    async settleCollectionAttempt(input) {
      const settlement = await collection.settlement(input);
      if (settlement.recorded) return;
      try {
        await drivers.invoices.transition(input.organisationId, settlement.invoiceId, 'markPaid', { paidDate: settlement.paidAt, collectedAttemptId: input.attemptId }, `collect:${input.attemptId}`);
      } catch (error) {
        if (!(error instanceof AppError && error.kind === 'conflict')) throw error;
      }
    },
  };
}
