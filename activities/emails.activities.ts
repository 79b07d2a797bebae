import type { Services } from '../src/services';
import type { EmailActivities } from '../workflows/email-delivery.types';

export function createEmailActivities(services: Services): EmailActivities {
  const { emails } = services;
  return {
    /** Hands the message to the mail server; a fault the server may get over is thrown, to retry. */
    deliverEmail: (input) => emails.deliver(input),
    failEmail: (input) => emails.fail(input),
  };
}
