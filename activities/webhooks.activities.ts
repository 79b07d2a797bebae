import type { Services } from '../src/services';
import type { WebhookActivities } from '../workflows/webhook-delivery.types';

export function createWebhookActivities(services: Services): WebhookActivities {
  const { webhooks } = services;
  return {
    /** One signed POST, logged; answers whether to stop or try again at the next offset. */
    attemptWebhookDelivery: (input) => webhooks.attempt(input),
    giveUpWebhookDelivery: (input) => webhooks.giveUp(input),
  };
}
