/** The contract of `webhookDeliveryWorkflow`: its input, its result and its activities. */

/** One delivery of one event to one endpoint; a redelivery is the same delivery under the next generation. */
export interface WebhookDeliveryInput {
  deliveryId: string;
  /** The delivery's endpoint: a delivery gone with its endpoint stops the schedule. */
  endpointId: string;
  organisationId: string;
  generation: number;
  /** When the schedule starts (ms since the epoch): the event's time, or the redelivery's. */
  since: number;
}

/**
 * When each attempt is made, in ms after `since`: at once, then 5 s, 30 s, 2 min, 10 min, 1 h, 6 h, 24 h,
 * 48 h and 72 h after.
 */
export const WEBHOOK_ATTEMPT_OFFSETS_MS = [0, 5_000, 30_000, 120_000, 600_000, 3_600_000, 21_600_000, 86_400_000, 172_800_000, 259_200_000] as const;

/** How a delivery ended. */
export type WebhookDeliveryOutcome = 'delivered' | 'stopped' | 'failed';

/** What one attempt answers: stop (delivered, or the endpoint is gone) or try again at the next offset. */
export type AttemptOutcome = 'delivered' | 'stopped' | 'retry';

export interface WebhookActivities {
  /** One signed POST, logged. */
  attemptWebhookDelivery(input: { deliveryId: string; endpointId: string; generation: number; attempt: number }): Promise<AttemptOutcome>;
  giveUpWebhookDelivery(input: { deliveryId: string; generation: number }): Promise<void>;
}
