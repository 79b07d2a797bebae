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
