import type { Services } from '../src/services';

export function createEmailActivities(services: Services) {
  const { emails } = services;
  return {
    /** Hands the message to the mail server; a fault the server may get over is thrown, to retry. */
    deliverEmail: (input: { organisationId: string; emailId: string }) => emails.deliver(input),
    failEmail: (input: { organisationId: string; emailId: string; error: string }) => emails.fail(input),
  };
}

export type EmailActivities = ReturnType<typeof createEmailActivities>;
