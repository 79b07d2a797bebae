export { destinationPolicy } from './destination';
export type { DestinationPolicy } from './destination';
export type { TriggerSubject } from './triggers';
export { createWebhookDeliveryControl, webhookSubscriber } from './webhook-deliveries';
export { createWebhookService } from './webhooks.service';
