import type { Knex } from 'knex';
import type { OutboxEvent } from '../../events/outbox';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface EndpointRow {
  id: string;
  organisation_id: string;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

/** An event of the outbox, as a delivery sends it. */
export type EventRow = OutboxEvent;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: string;
  organisation_id: string;
  endpoint_id: string;
  event_id: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  generation: number;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  attempt: number;
  generation: number;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
  created_at: Date;
}

/** A delivery with what its attempt needs: the event and the endpoint. */
export type DeliveryToAttempt = DeliveryRow & { event: EventRow; endpoint: EndpointRow | undefined };

export interface NewAttempt {
  deliveryId: string;
  generation: number;
  attempt: number;
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

/** Webhook endpoints, the outbox of events, deliveries and their attempts. `db` may be a transaction. */
export function createWebhookRepository(db: Knex) {
  const endpoints = (organisationId: string) => db<EndpointRow>('webhook_endpoints').where({ organisation_id: organisationId });

  return {
    /**
     * An event sent through POST /webhooks/trigger: its payload says so (`triggered: true`, beside `type`),
     * and it names the object it carries, if any, for `latestTrigger`.
     */
    async emitTriggered(organisationId: string, type: string, data: unknown, objectId: string | null, at = new Date()): Promise<string> {
      const id = newId('msg', at.getTime());
      await db('webhook_events').insert({
        id,
        organisation_id: organisationId,
        type,
        payload: JSON.stringify({ type, triggered: true, timestamp: at.toISOString(), data }),
        created_at: at,
        triggered_object_id: objectId,
      });
      return id;
    },

    /** Until the caller's transaction ends, no other trigger of this type for this object runs. */
    async lockTrigger(organisationId: string, type: string, objectId: string): Promise<void> {
      await db.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`webhook_events.trigger:${organisationId}:${type}:${objectId}`]);
    },

    /** The latest event triggered for this type and object since `since`. */
    async latestTrigger(organisationId: string, type: string, objectId: string, since: Date): Promise<EventRow | undefined> {
      return db<EventRow>('webhook_events')
        .where({ organisation_id: organisationId, type, triggered_object_id: objectId })
        .where('created_at', '>', since)
        .orderBy('created_at', 'desc')
        .first();
    },

    async createEndpoint(organisationId: string, endpoint: { url: string; description?: string; eventTypes: string[]; enabled: boolean; secret: string }): Promise<EndpointRow> {
      const [row] = await db<EndpointRow>('webhook_endpoints')
        .insert({
          id: newId('whe'),
          organisation_id: organisationId,
          url: endpoint.url,
          description: endpoint.description ?? null,
          event_types: JSON.stringify(endpoint.eventTypes) as unknown as string[],
          enabled: endpoint.enabled,
          secret: endpoint.secret,
        })
        .returning('*');
      return row!;
    },

    async findEndpoint(organisationId: string, id: string): Promise<EndpointRow | undefined> {
      return endpoints(organisationId).where({ id }).first();
    },

    async listEndpoints(organisationId: string, paging: PageQuery): Promise<Page<EndpointRow>> {
      return paginate<EndpointRow, EndpointRow>(endpoints(organisationId).select('*'), paging, { searchColumns: ['url', 'description'], map: (row) => row });
    },

    async updateEndpoint(organisationId: string, id: string, changes: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean }): Promise<EndpointRow | undefined> {
      const [row] = await endpoints(organisationId)
        .where({ id })
        .update({
          ...(changes.url !== undefined ? { url: changes.url } : {}),
          ...(changes.description !== undefined ? { description: changes.description } : {}),
          ...(changes.eventTypes !== undefined ? { event_types: JSON.stringify(changes.eventTypes) as unknown as string[] } : {}),
          // Turning an endpoint on again clears why delivery turned it off.
          ...(changes.enabled !== undefined ? { enabled: changes.enabled, ...(changes.enabled ? { disabled_reason: null } : {}) } : {}),
          updated_at: db.fn.now() as unknown as Date,
        })
        .returning('*');
      return row;
    },

    async deleteEndpoint(organisationId: string, id: string): Promise<boolean> {
      return (await endpoints(organisationId).where({ id }).delete()) > 0;
    },

    /** Signing secrets an older version kept in the clear, sealed now (`seal` maps a plain secret to its sealed form). */
    async sealPlainSecrets(seal: (plain: string) => string, isSealed: (value: string) => boolean): Promise<number> {
      const rows = await db<EndpointRow>('webhook_endpoints').select('id', 'secret', 'previous_secret');
      let sealed = 0;
      for (const row of rows) {
        const changes = {
          ...(isSealed(row.secret) ? {} : { secret: seal(row.secret) }),
          ...(row.previous_secret === null || isSealed(row.previous_secret) ? {} : { previous_secret: seal(row.previous_secret) }),
        };
        if (Object.keys(changes).length === 0) continue;
        await db('webhook_endpoints').where({ id: row.id }).update(changes);
        sealed += 1;
      }
      return sealed;
    },

    /** A new secret; the one it replaces keeps signing until `previousExpiresAt`. */
    async rotateSecret(organisationId: string, id: string, secret: string, previousExpiresAt: Date): Promise<EndpointRow | undefined> {
      const [row] = await endpoints(organisationId)
        .where({ id })
        .update({ previous_secret: db.ref('secret') as unknown as string, previous_secret_expires_at: previousExpiresAt, secret, updated_at: db.fn.now() as unknown as Date })
        .returning('*');
      return row;
    },

    async endpointExists(id: string): Promise<boolean> {
      return Boolean(await db('webhook_endpoints').where({ id }).first('id'));
    },

    async disableEndpoint(id: string, reason: string): Promise<void> {
      await db('webhook_endpoints').where({ id }).update({ enabled: false, disabled_reason: reason, updated_at: db.fn.now() });
    },

    /**
     * The oldest events not yet dispatched, locked so that two dispatchers never take the same one
     * (SKIP LOCKED: the other takes the next ones).
     */
    /** The organisation's enabled endpoints, for choosing an event's subscribers. */
    async enabledEndpoints(organisationId: string): Promise<EndpointRow[]> {
      return endpoints(organisationId).where({ enabled: true });
    },

    /** One delivery per (endpoint, event); a second dispatch of the same pair finds the first. */
    async createDeliveries(deliveries: Array<{ id: string; organisationId: string; endpointId: string; eventId: string }>): Promise<void> {
      if (deliveries.length === 0) return;
      await db('webhook_deliveries')
        .insert(deliveries.map((delivery) => ({ id: delivery.id, organisation_id: delivery.organisationId, endpoint_id: delivery.endpointId, event_id: delivery.eventId })))
        .onConflict(['endpoint_id', 'event_id'])
        .ignore();
    },

    async deliveryToAttempt(deliveryId: string): Promise<DeliveryToAttempt | undefined> {
      const delivery = await db<DeliveryRow>('webhook_deliveries').where({ id: deliveryId }).first();
      if (!delivery) return undefined;
      const event = (await db<EventRow>('webhook_events').where({ id: delivery.event_id }).first())!;
      const endpoint = await db<EndpointRow>('webhook_endpoints').where({ id: delivery.endpoint_id }).first();
      return { ...delivery, event, endpoint };
    },

    /** Records an attempt once (a retried activity finds its row) and counts it on the delivery. */
    async recordAttempt(attempt: NewAttempt): Promise<boolean> {
      const inserted = await db('webhook_attempts')
        .insert({
          id: newId('wha'),
          delivery_id: attempt.deliveryId,
          generation: attempt.generation,
          attempt: attempt.attempt,
          status_code: attempt.statusCode,
          duration_ms: attempt.durationMs,
          response_excerpt: attempt.responseExcerpt,
          error: attempt.error,
        })
        .onConflict(['delivery_id', 'generation', 'attempt'])
        .ignore()
        .returning('id');
      if (inserted.length === 0) return false;
      await db('webhook_deliveries').where({ id: attempt.deliveryId }).update({ attempts: db.raw('attempts + 1'), last_status_code: attempt.statusCode, updated_at: db.fn.now() });
      return true;
    },

    async finishDelivery(deliveryId: string, status: Exclude<DeliveryStatus, 'pending'>): Promise<void> {
      await db('webhook_deliveries')
        .where({ id: deliveryId })
        .update({ status, ...(status === 'delivered' ? { delivered_at: db.fn.now() } : {}), updated_at: db.fn.now() });
    },

    /** A redelivery: pending again, under the next generation. Answers the delivery, or undefined. */
    async reopenDelivery(organisationId: string, id: string): Promise<DeliveryRow | undefined> {
      const [row] = await db<DeliveryRow>('webhook_deliveries')
        .where({ organisation_id: organisationId, id })
        .update({ status: 'pending', generation: db.raw('generation + 1') as unknown as number, updated_at: db.fn.now() as unknown as Date })
        .returning('*');
      return row;
    },

    /** A delivery with its event's type, as the delivery list shows it. */
    async findDelivery(organisationId: string, id: string): Promise<(DeliveryRow & { type: string }) | undefined> {
      return db('webhook_deliveries as d').join('webhook_events as e', 'e.id', 'd.event_id').where({ 'd.organisation_id': organisationId, 'd.id': id }).first('d.*', 'e.type');
    },

    async listDeliveries(organisationId: string, filter: { endpointId?: string; status?: DeliveryStatus }, paging: PageQuery): Promise<Page<DeliveryRow & { type: string }>> {
      const query = db('webhook_deliveries as d')
        .join('webhook_events as e', 'e.id', 'd.event_id')
        .where('d.organisation_id', organisationId)
        .select('d.*', 'e.type');
      if (filter.endpointId) query.where('d.endpoint_id', filter.endpointId);
      if (filter.status) query.where('d.status', filter.status);
      return paginate<DeliveryRow & { type: string }, DeliveryRow & { type: string }>(query, paging, {
        searchColumns: ['e.type'],
        orderBy: [
          { column: 'd.created_at', order: 'desc' },
          { column: 'd.id', order: 'desc' },
        ],
        map: (row) => row,
      });
    },

    async attemptsOf(deliveryIds: string[]): Promise<Array<AttemptRow & { delivery_id: string }>> {
      if (deliveryIds.length === 0) return [];
      return db('webhook_attempts').whereIn('delivery_id', deliveryIds).orderBy([{ column: 'generation' }, { column: 'attempt' }]).select('delivery_id', 'generation', 'attempt', 'status_code', 'duration_ms', 'response_excerpt', 'error', 'created_at');
    },
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;
