/** The contract of `emailDeliveryWorkflow`: its input, its result and its activities. */

export interface EmailDeliveryInput {
  organisationId: string;
  emailId: string;
}

/** Handed to the mail server, or refused by it for good. */
export type EmailOutcome = 'sent' | 'refused';

export interface EmailActivities {
  /** Hands the message to the mail server; a fault the server may get over is thrown, to retry. */
  deliverEmail(input: EmailDeliveryInput): Promise<EmailOutcome>;
  failEmail(input: EmailDeliveryInput & { error: string }): Promise<void>;
}
