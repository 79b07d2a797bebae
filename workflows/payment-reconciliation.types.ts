/** The contract of `paymentReconciliationWorkflow`: its input and its activity. */

export interface PaymentReconciliationInput {
  organisationId: string;
  /** How many days back the gateway's payments are read. */
  days: number;
}

export interface PaymentReconciliationActivities {
  /** Compares the gateway's payments with ours and stores the report; answers how many differences it found. */
  reconcilePayments(input: PaymentReconciliationInput): Promise<{ differences: number }>;
}
