import type { EmailActivities, EmailDeliveryInput, EmailOutcome } from './email-delivery.types';
import { activitiesOf } from './shared';

const emailActivities = activitiesOf<Pick<EmailActivities, 'deliverEmail'>>('emailSend');
const bookkeepingActivities = activitiesOf<Pick<EmailActivities, 'failEmail'>>('bookkeeping');

/**
 * `POST /emails`: one message handed to the mail server, retried with backoff while the server is away or
 * answers 4xx. A message it refuses for good, or one every attempt failed to send, is recorded as failed.
 */
export async function emailDeliveryWorkflow(input: EmailDeliveryInput): Promise<EmailOutcome> {
  try {
    return await emailActivities.deliverEmail(input);
  } catch (error) {
    // An activity's failure wraps the fault that ended its last attempt: that is what the message records.
    const cause = error instanceof Error ? (error.cause ?? error) : error;
    await bookkeepingActivities.failEmail({ ...input, error: cause instanceof Error ? cause.message : String(cause) });
    throw error;
  }
}
