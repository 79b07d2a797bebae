import { ActivityFailure, sleep } from '@temporalio/workflow';
import { WEBHOOK_ATTEMPT_OFFSETS_MS, type AttemptOutcome, type WebhookActivities, type WebhookDeliveryInput, type WebhookDeliveryOutcome } from './webhook-delivery.types';
import { activitiesOf } from './shared';

const webhookActivities = activitiesOf<WebhookActivities>('webhookAttempt');

/**
 * Delivers one event to one endpoint: each attempt at its offset from the event's time, on durable
 * timers, so a restart keeps the schedule; stops at the first 2xx, at a 410 (the endpoint is then turned
 * off) or when the endpoint is gone or disabled; after the last attempt the delivery is failed.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryOutcome> {
  for (const [index, offset] of WEBHOOK_ATTEMPT_OFFSETS_MS.entries()) {
    const wait = input.since + offset - Date.now();
    if (wait > 0) await sleep(wait);
    let outcome: AttemptOutcome;
    try {
      outcome = await webhookActivities.attemptWebhookDelivery({ deliveryId: input.deliveryId, endpointId: input.endpointId, generation: input.generation, attempt: index + 1 });
    } catch (error) {
      // An attempt whose activity gave up (Postgres away for minutes) is one more failed attempt: the
      // schedule goes on, rather than leave the delivery pending with no workflow behind it.
      if (!(error instanceof ActivityFailure)) throw error;
      outcome = 'retry';
    }
    if (outcome !== 'retry') return outcome;
  }
  await webhookActivities.giveUpWebhookDelivery({ deliveryId: input.deliveryId, generation: input.generation });
  return 'failed';
}
