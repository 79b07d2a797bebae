/** The contract of `gatewayRefundWorkflow`: its input and its activities. */

/** A credit note's refund, to be paid back through the gateway that collected its invoice. */
export interface RefundRequest {
  organisationId: string;
  creditNoteId: string;
  invoiceId: string;
  amount: string;
  currency: string;
}

/** A refund through the gateway: asked and not yet settled, made, refused; `none`: no gateway collected the invoice. */
export type RefundStatus = 'pending' | 'succeeded' | 'failed' | 'none';

export interface GatewayRefundActivities {
  /** Asks the gateway for the refund once, or reads back the one asked: its state now. */
  refundThroughGateway(input: RefundRequest): Promise<RefundStatus>;
}
