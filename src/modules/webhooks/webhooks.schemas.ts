import { z } from 'zod';
import { withFormerNames } from '../../http/former-names';
import { DOMAIN_EVENT_TYPES, type DomainEventType } from '../../domain/events';
import { pageQuery } from '../../http/paging';
import { atLeastOne, freeText, reference, text } from '../../http/schemas';
import { TRIGGERABLE_EVENT_TYPES } from './triggers';

/**
 * Every event type an endpoint may subscribe to: the domain events (src/domain/events.ts) and the test event;
 * `docs/webhooks.md` shows a payload of each.
 */
export const WEBHOOK_EVENT_TYPES: [DomainEventType | 'webhook.test', ...Array<DomainEventType | 'webhook.test'>] = [DOMAIN_EVENT_TYPES[0]!, ...DOMAIN_EVENT_TYPES.slice(1), 'webhook.test'];
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

// Every type the trigger sends is one endpoints subscribe to.
const _triggerableAreEventTypes: readonly WebhookEventType[] = TRIGGERABLE_EVENT_TYPES;

const eventTypes = z
  .array(z.enum(['*', ...WEBHOOK_EVENT_TYPES], { error: `must be "*" or an event type: ${WEBHOOK_EVENT_TYPES.join(', ')}` }))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .refine((types) => new Set(types).size === types.length, 'must not repeat an event type')
  // With "*" every type is sent: the endpoint keeps ["*"] alone.
  .transform((types) => (types.includes('*') ? ['*' as const] : types))
  .meta({ uniqueItems: true })
  .describe('the event types sent to the endpoint, each once, or ["*"] for all (any other type beside "*" adds nothing)');

/** webhook_endpoints.url and description are text; 2,048 characters is what browsers and proxies agree on. */
const url = text(2048).describe('where events are POSTed: https in production');
const description = freeText(1000);

export const createEndpointBody = z.object({
  url,
  description: description.optional(),
  eventTypes,
  enabled: z.boolean().default(true),
});

export const updateEndpointBody = atLeastOne({ url: url.optional(), description: description.nullable().optional(), eventTypes: eventTypes.optional(), enabled: z.boolean().optional() });

/** Renamed to the one naming style (an instant ends in At), with its former name. */
export const ENDPOINT_RENAMES = { secretRotatedUntil: 'secretRotationEndsAt' } as const;

export const endpointSchema = withFormerNames(z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  eventTypes: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('why delivery turned the endpoint off (a 410 Gone)'),
  secretRotationEndsAt: z.string().nullable().describe('ISO date-time: until when the previous secret also signs, after a rotation'),
  createdAt: z.string(),
  updatedAt: z.string(),
}), ENDPOINT_RENAMES);

export const endpointWithSecretSchema = endpointSchema.extend({
  secret: z.string().describe('the signing secret (whsec_…), shown only when the endpoint is created or its secret rotated'),
});

export const deliveryQuery = pageQuery.extend({
  endpointId: reference().optional(),
  status: z.enum(['pending', 'delivered', 'failed']).optional(),
});

export const attemptSchema = z.object({
  attempt: z.number().int(),
  statusCode: z.number().int().nullable(),
  durationMs: z.number().int(),
  responseExcerpt: z.string().nullable().describe('the first 1 KB of the response'),
  error: z.string().nullable(),
  at: z.string(),
});

export const deliverySchema = z.object({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string().describe('the webhook-id header of every attempt'),
  eventType: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.array(attemptSchema),
  deliveredAt: z.string().nullable(),
  createdAt: z.string(),
});

export const triggerBody = z.object({
  eventType: z
    .enum(TRIGGERABLE_EVENT_TYPES, {
      error: () => `must be webhook.test or an event that names its object's state (${TRIGGERABLE_EVENT_TYPES.slice(1).join(', ')}); events of a step (an undo, a plan change, a milestone, credits) are not triggered: redeliver the original delivery`,
    })
    .describe('webhook.test, or an event type that names a state of its object'),
  objectId: reference()
    .optional()
    .describe(
      "the object whose current state the event carries (required but for webhook.test): an invoice (invoice.*), a run (invoice_run.*), a contract (contract.*), a payment (payment.created), a credit note (credit_note.*) or a usage batch (usage.batch_processed); it must be in the state the event names",
    ),
});

export const triggerSchema = z.object({
  eventId: z.string().describe("the event's id, its webhook-id"),
  eventType: z.string(),
  repeated: z.boolean().describe('true when the same type was triggered for the same object in the last 24 hours: that event is answered, and nothing new is sent'),
});
