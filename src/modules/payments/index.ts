import type { Knex } from 'knex';
import { createGatewayRepository, type AttemptRow, type GatewayRefundable, type GatewayRefundRow } from './gateway.repository';
import { createPaymentRepository } from './payments.repository';

export { paymentSchema } from './payments.schemas';
export { createPaymentService, markPaidPaymentKey } from './payments.service';
export type { PaymentService } from './payments.service';
export { createCollectionService } from './collection.service';
export type { CollectionService, CollectionStep } from './collection.service';
export { createPaymentGatewayService } from './payment-gateway.service';
export type { PaymentGatewayService } from './payment-gateway.service';
export { collectionSubscriber, nudgeCollection, refundSubscriber } from './collection.subscriber';
export type { StripeEndpoint } from './providers/stripe';
export { ensureReconciliationSchedule } from './reconciliation-schedule';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type PaymentAccess = Pick<ReturnType<typeof createPaymentRepository>, 'findById' | 'insert' | 'listOfInvoice' | 'paidTowards' | 'refundable' | 'setDeleted'> & {
  /** A gateway's payment attempt of the organisation, locked until the transaction ends. */
  collectedAttempt(organisationId: string, attemptId: string): Promise<AttemptRow | undefined>;
  /** Records that `paymentId` is the payment the attempt's gateway payment made. */
  linkAttemptPayment(attemptId: string, paymentId: string): Promise<void>;
  /** The gateway attempt a payment records, if a gateway collected it: such a payment goes back only by a refund. */
  gatewayAttemptOf(paymentId: string): Promise<AttemptRow | undefined>;
  /** A gateway's payment of the invoice under way (`processing`) or taken and not yet recorded: it will pay the invoice. */
  collectingAttempt(invoiceId: string): Promise<AttemptRow | undefined>;
  /** What a refund through the gateway that collected the invoice can still pay back; undefined when none did. */
  gatewayRefundable(invoiceId: string): Promise<GatewayRefundable | undefined>;
  /** The credit note's refund through a gateway, if one was asked: money sent back is not taken back by a void. */
  gatewayRefundOf(creditNoteId: string): Promise<GatewayRefundRow | undefined>;
};

export const paymentsIn = (db: Knex): PaymentAccess => {
  const payments = createPaymentRepository(db);
  const gateway = createGatewayRepository(db);
  return {
    findById: payments.findById,
    insert: payments.insert,
    listOfInvoice: payments.listOfInvoice,
    paidTowards: payments.paidTowards,
    refundable: payments.refundable,
    setDeleted: payments.setDeleted,
    collectedAttempt: (organisationId, attemptId) => gateway.findAttempt(organisationId, attemptId, true),
    linkAttemptPayment: gateway.setAttemptPayment,
    gatewayAttemptOf: gateway.findAttemptOfPayment,
    gatewayRefundOf: gateway.findRefundOfCreditNote,
    gatewayRefundable: gateway.gatewayRefundable,
    collectingAttempt: gateway.collecting,
  };
};
