import { createHash, randomBytes } from 'node:crypto';
import { sendingFormerNames } from '../../http/former-names';
import { ENDPOINT_RENAMES } from './webhooks.schemas';
import type { Knex } from 'knex';
import type { SecretBox } from '../../security/secret-box';
import { Webhook } from 'standardwebhooks';
import { AppError, InvariantError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { Logger } from 'pino';
import type { OutboxEvent } from '../../events/outbox';
import { postJson, urlProblem, type DestinationPolicy } from './destination';
import { createWebhookRepository, type AttemptRow, type DeliveryRow, type DeliveryStatus, type EndpointRow } from './webhooks.repository';
import { nounOf, TEST_EVENT_DATA, TRIGGER_REPEAT_WINDOW_MS, ruleOf, triggerRefusal, type TriggerableEventType, type TriggerKind, type TriggerSubject } from './triggers';

/** How long the previous secret keeps signing after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** How long one attempt waits for an answer. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** A new signing secret in the Standard Webhooks format: `whsec_` and 24 random bytes in base64. */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** A delivery's id follows from its endpoint and event, so that a dispatch done twice names the same delivery. */
export const deliveryIdOf = (endpointId: string, eventId: string) => `whd_${createHash('sha256').update(`${endpointId}\u0000${eventId}`).digest('hex').slice(0, 26)}`;

const subscribed = (endpoint: EndpointRow, type: string) => endpoint.event_types.includes('*') || endpoint.event_types.includes(type) || type === 'webhook.test';

export function toEndpoint(row: EndpointRow, now = new Date()) {
  return sendingFormerNames({
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    secretRotationEndsAt: row.previous_secret_expires_at && row.previous_secret_expires_at > now ? row.previous_secret_expires_at.toISOString() : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }, ENDPOINT_RENAMES);
}

function toDelivery(row: DeliveryRow & { type: string }, attempts: AttemptRow[]) {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.type,
    status: row.status,
    attempts: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      statusCode: attempt.status_code,
      durationMs: attempt.duration_ms,
      responseExcerpt: attempt.response_excerpt,
      error: attempt.error,
      at: attempt.created_at.toISOString(),
    })),
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}

/** What one attempt came to: delivered, refused for good (410, endpoint gone or off), or worth another try. */
export type AttemptOutcome = 'delivered' | 'stopped' | 'retry';

/** A delivery the dispatcher made, for its workflow. */
export interface DispatchedDelivery {
  deliveryId: string;
  endpointId: string;
  organisationId: string;
  /** When the event happened: attempts are scheduled from it. */
  since: number;
}

/** An object as the API shows it, with the facts the trigger's rules check; a 404 when there is none of the kind. */
export type ObjectResolver = (organisationId: string, kind: TriggerKind, objectId: string) => Promise<TriggerSubject>;

/** What the trigger answers: the event's id, and whether it is that of an earlier trigger. */
export interface TriggeredEvent {
  eventId: string;
  eventType: string;
  repeated: boolean;
}

/**
 * Outbound webhooks: endpoints and their secrets, the events of the outbox turned into one delivery per
 * subscribed endpoint, and each delivery's attempts, signed per the Standard Webhooks specification.
 */
export function createWebhookService(deps: { db: Knex; policy: DestinationPolicy; secrets: SecretBox; resolveObject?: ObjectResolver; logger?: Logger }) {
  const { db, policy } = deps;
  const repository = createWebhookRepository(db);

  function checkUrl(url: string): void {
    const problem = urlProblem(url, policy);
    if (problem) throw AppError.validation(problem, 'body.url');
  }

  /** The signatures of a message: the current secret's, and the previous one's while it still signs. */
  function signatures(endpoint: EndpointRow, id: string, at: Date, body: string): string {
    // Kept sealed in Postgres: opened for the signature only.
    const signing = [endpoint.secret, ...(endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at > at ? [endpoint.previous_secret] : [])];
    return signing.map((secret) => new Webhook(deps.secrets.open(secret)).sign(id, at, body)).join(' ');
  }

  return {
    async createEndpoint(organisationId: string, body: { url: string; description?: string; eventTypes: string[]; enabled: boolean }) {
      checkUrl(body.url);
      const secret = newSecret();
      const row = await repository.createEndpoint(organisationId, { ...body, secret: deps.secrets.seal(secret) });
      return { ...toEndpoint(row), secret };
    },

    async getEndpoint(organisationId: string, id: string) {
      return toEndpoint(orNotFound(await repository.findEndpoint(organisationId, id), 'Webhook endpoint'));
    },

    async listEndpoints(organisationId: string, paging: PageQuery): Promise<Page<ReturnType<typeof toEndpoint>>> {
      const page = await repository.listEndpoints(organisationId, paging);
      return { ...page, items: page.items.map((row) => toEndpoint(row)) };
    },

    async updateEndpoint(organisationId: string, id: string, body: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean }) {
      if (body.url !== undefined) checkUrl(body.url);
      return toEndpoint(orNotFound(await repository.updateEndpoint(organisationId, id, body), 'Webhook endpoint'));
    },

    async deleteEndpoint(organisationId: string, id: string): Promise<{ id: string; deleted: true }> {
      if (!(await repository.deleteEndpoint(organisationId, id))) throw AppError.notFound('Webhook endpoint');
      return { id, deleted: true };
    },

    /** Signing secrets an older version kept in the clear, sealed: run once as a worker starts. */
    async sealPlainSecrets(): Promise<number> {
      return repository.sealPlainSecrets(deps.secrets.seal, deps.secrets.isSealed);
    },

    /** A new secret, shown once; the previous one keeps signing for 24 hours, so receivers can switch over. */
    async rotateSecret(organisationId: string, id: string) {
      const secret = newSecret();
      const row = orNotFound(await repository.rotateSecret(organisationId, id, deps.secrets.seal(secret), new Date(Date.now() + SECRET_OVERLAP_MS)), 'Webhook endpoint');
      return { ...toEndpoint(row), secret };
    },

    async listDeliveries(organisationId: string, filter: { endpointId?: string; status?: DeliveryStatus }, paging: PageQuery) {
      const page = await repository.listDeliveries(organisationId, filter, paging);
      const attempts = await repository.attemptsOf(page.items.map((row) => row.id));
      return { ...page, items: page.items.map((row) => toDelivery(row, attempts.filter((attempt) => attempt.delivery_id === row.id))) };
    },

    /** Pending again under the next generation; the caller starts its workflow. */
    async reopenDelivery(organisationId: string, id: string): Promise<DeliveryRow> {
      return orNotFound(await repository.reopenDelivery(organisationId, id), 'Webhook delivery');
    },

    async getDelivery(organisationId: string, id: string) {
      const row = orNotFound(await repository.findDelivery(organisationId, id), 'Webhook delivery');
      return toDelivery(row, await repository.attemptsOf([row.id]));
    },

    /**
     * A test event, or an object's current state as the given event, through the outbox like any other:
     * every endpoint subscribed to the type receives it (a `webhook.test` reaches every enabled endpoint).
     * Its payload carries `triggered: true`. An object is sent only while it is in the state the event
     * names (409 otherwise, naming its state); the same type for the same object again within 24 hours
     * answers the first event's id and sends nothing, so a receiver never gets two messages of one fact.
     */
    async trigger(organisationId: string, body: { eventType: TriggerableEventType; objectId?: string }): Promise<TriggeredEvent> {
      const { eventType, objectId } = body;
      if (eventType === 'webhook.test') {
        if (objectId) throw AppError.validation('webhook.test carries no object: leave objectId out', 'body.objectId');
        return { eventId: await repository.emitTriggered(organisationId, eventType, TEST_EVENT_DATA, null), eventType, repeated: false };
      }
      if (!objectId) throw AppError.validation(`objectId is required: ${eventType} carries the ${nounOf(eventType)} it reports`, 'body.objectId');
      if (!deps.resolveObject) throw new InvariantError('the webhook service was built without an object resolver');
      const subject = await deps.resolveObject(organisationId, ruleOf(eventType).kind, objectId);
      const refusal = triggerRefusal(eventType, subject.facts);
      if (refusal) throw AppError.conflict(refusal);
      return db.transaction(async (trx) => {
        const repo = createWebhookRepository(trx);
        await repo.lockTrigger(organisationId, eventType, objectId);
        const earlier = await repo.latestTrigger(organisationId, eventType, objectId, new Date(Date.now() - TRIGGER_REPEAT_WINDOW_MS));
        if (earlier) return { eventId: earlier.id, eventType, repeated: true };
        return { eventId: await repo.emitTriggered(organisationId, eventType, subject.data, objectId), eventType, repeated: false };
      });
    },

    /**
     * The webhooks' part of a relay step, in the relay's transaction: each event becomes one delivery per
     * subscribed endpoint and `start` runs each delivery's workflow. If a start fails, nothing commits and the
     * relay hands the same events on again; a workflow already started for a delivery keeps running (its id
     * follows from the delivery's), and a delivery made twice is the same row.
     */
    async deliver(trx: Knex.Transaction, events: readonly OutboxEvent[], start: (deliveries: DispatchedDelivery[]) => Promise<void>): Promise<void> {
      const repo = createWebhookRepository(trx);
      const endpointsOf = new Map<string, EndpointRow[]>();
      for (const organisationId of new Set(events.map((event) => event.organisation_id))) endpointsOf.set(organisationId, await repo.enabledEndpoints(organisationId));
      const pairs = events.flatMap((event) =>
        (endpointsOf.get(event.organisation_id) ?? []).filter((endpoint) => subscribed(endpoint, event.type)).map((endpoint) => ({ event, endpoint })),
      );
      await repo.createDeliveries(pairs.map(({ event, endpoint }) => ({ id: deliveryIdOf(endpoint.id, event.id), organisationId: event.organisation_id, endpointId: endpoint.id, eventId: event.id })));
      await start(pairs.map(({ event, endpoint }) => ({ deliveryId: deliveryIdOf(endpoint.id, event.id), endpointId: endpoint.id, organisationId: event.organisation_id, since: event.created_at.getTime() })));
    },

    /**
     * One attempt of a delivery: signed, POSTed with a 10 s timeout, logged. Every attempt of every
     * generation carries the event's id as `webhook-id`. A delivery not found yet is a transient fault
     * (its dispatch has not committed), left to the activity's retries.
     */
    async attempt(input: { deliveryId: string; endpointId: string; generation: number; attempt: number }): Promise<AttemptOutcome> {
      const delivery = await repository.deliveryToAttempt(input.deliveryId);
      if (!delivery) {
        // Deleted with its endpoint: nothing left to deliver. Otherwise its dispatch has not committed yet.
        if (!(await repository.endpointExists(input.endpointId))) return 'stopped';
        throw AppError.unavailable(`delivery ${input.deliveryId} is not committed yet`);
      }
      if (delivery.status !== 'pending' || delivery.generation !== input.generation) return 'stopped';
      const endpoint = delivery.endpoint;
      if (!endpoint || !endpoint.enabled) {
        await repository.finishDelivery(delivery.id, 'failed');
        return 'stopped';
      }
      const at = new Date();
      const body = JSON.stringify(delivery.event.payload);
      const headers = { 'webhook-id': delivery.event.id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signatures(endpoint, delivery.event.id, at, body) };
      const result = await postJson(endpoint.url, headers, body, policy, ATTEMPT_TIMEOUT_MS);
      // The details (addresses, the system's message) go to the worker's log; the delivery log, which the
      // organisation's Admins read, keeps the words that name no address.
      if (result.detail) deps.logger?.warn({ deliveryId: delivery.id, endpointId: endpoint.id, organisationId: delivery.organisation_id, attempt: input.attempt, reason: result.detail }, `webhook attempt failed: ${result.error}`);
      await repository.recordAttempt({ deliveryId: delivery.id, generation: input.generation, attempt: input.attempt, statusCode: result.statusCode, durationMs: result.durationMs, responseExcerpt: result.excerpt, error: result.error });
      if (result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300) {
        await repository.finishDelivery(delivery.id, 'delivered');
        return 'delivered';
      }
      if (result.statusCode === 410) {
        // The receiver says the endpoint is gone for good: no more deliveries to it.
        await repository.disableEndpoint(endpoint.id, `${endpoint.url} answered 410 Gone on ${at.toISOString()}`);
        await repository.finishDelivery(delivery.id, 'failed');
        return 'stopped';
      }
      return 'retry';
    },

    /** Every scheduled attempt failed. */
    async giveUp(input: { deliveryId: string; generation: number }): Promise<void> {
      const delivery = await repository.deliveryToAttempt(input.deliveryId);
      if (delivery && delivery.status === 'pending' && delivery.generation === input.generation) await repository.finishDelivery(input.deliveryId, 'failed');
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
