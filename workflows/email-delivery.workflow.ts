import { bookkeepingActivities, emailActivities } from './shared';

export interface EmailDeliveryInput {
  organisationId: string;
  emailId: string;
}

/**
 * `POST /emails`: one message handed to the mail server, retried with backoff while the server is away or
 * answers 4xx. A message it refuses for good, or one every attempt failed to send, is recorded as failed.
 */
export async function emailDeliveryWorkflow(input: EmailDeliveryInput): Promise<'sent' | 'refused'> {
  try {
    return await emailActivities.deliverEmail(input);
  } catch (error) {
    // An activity's failure wraps the fault that ended its last attempt: that is what the message records.
    const cause = error instanceof Error ? (error.cause ?? error) : error;
    await bookkeepingActivities.failEmail({ ...input, error: cause instanceof Error ? cause.message : String(cause) });
    throw error;
  }
}
