import type { Services } from '../src/services';

export function createWebhookActivities(services: Services) {
  const { webhooks } = services;
  return {
    /** One signed POST, logged; answers whether to stop or try again at the next offset. */
    attemptWebhookDelivery: (input: { deliveryId: string; endpointId: string; generation: number; attempt: number }) => webhooks.attempt(input),
    giveUpWebhookDelivery: (input: { deliveryId: string; generation: number }) => webhooks.giveUp(input),
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
