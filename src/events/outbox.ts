import type { Knex } from 'knex';
import { bulkInsert } from '../db/bulk';
import { newId } from '../db/ids';
import type { DomainEvent, DomainEventData, DomainEventType } from '../domain/events';

/**
 * The outbox (table `webhook_events`, its name from when webhooks were its only reader): a change writes its
 * domain events in its own transaction, so that an event exists if and only if the change it reports
 * commits. The relay (./relay.ts) hands them to the subscribers afterwards.
 */

/** An event as the outbox keeps it: its payload is what a webhook sends. */
export interface OutboxEvent {
  id: string;
  organisation_id: string;
  type: string;
  /** `triggered` only on events sent through POST /webhooks/trigger; events of real changes leave it out. */
  payload: { type: string; triggered?: true; timestamp: string; data: unknown };
  created_at: Date;
  dispatched_at: Date | null;
  /** Why the event was set aside undelivered (a deterministic error of a subscriber); null once handed on. */
  dispatch_error?: string | null;
  /** The object a triggered event carries. */
  triggered_object_id: string | null;
}

const EVENT_COLUMNS = [
  ['id', 'text'],
  ['organisation_id', 'text'],
  ['type', 'text'],
  ['payload', 'jsonb'],
  ['created_at', 'timestamptz'],
] as const;

/** Records one event of the organisation in `db`'s transaction; answers its id, which is its `webhook-id`. */
export async function recordEvent(db: Knex, organisationId: string, event: DomainEvent, at = new Date()): Promise<string> {
  const id = newId('msg', at.getTime());
  await db('webhook_events').insert({ id, organisation_id: organisationId, type: event.type, payload: JSON.stringify({ type: event.type, timestamp: at.toISOString(), data: event.data }), created_at: at });
  return id;
}

/** Events of many changes of one type, in one statement; each gets its own id. */
export async function recordEvents<T extends DomainEventType>(db: Knex, organisationId: string, type: T, datas: ReadonlyArray<DomainEventData[T]>, at = new Date()): Promise<void> {
  if (datas.length === 0) return;
  const rows = datas.map((data) => ({ id: newId('msg', at.getTime()), organisation_id: organisationId, type, payload: { type, timestamp: at.toISOString(), data }, created_at: at.toISOString() }));
  await bulkInsert(db, 'webhook_events', EVENT_COLUMNS, rows);
}

/** Event types whose reactions are set-based and read totals: they are handed on together rather than one by one. */
export interface Gathering {
  types: readonly string[];
  /** Events of those types wait until the oldest of them is this old; then all of them go together. */
  ms: number;
}

/**
 * The oldest events no relay has handed on yet, locked for this transaction; other relays skip them. Events
 * of a `gathering`'s types are left waiting while the oldest of them is younger than its `ms`, so that one
 * step takes the events of that whole span and their reactions run once for it.
 */
export async function lockUndispatched(trx: Knex, limit: number, gathering?: Gathering, now = new Date()): Promise<OutboxEvent[]> {
  const query = trx<OutboxEvent>('webhook_events').whereNull('dispatched_at');
  if (gathering && gathering.types.length > 0) {
    const cutoff = new Date(now.getTime() - gathering.ms).toISOString();
    query.where((where) =>
      where.whereNotIn('type', [...gathering.types]).orWhereExists((oldest) =>
        oldest.select(trx.raw('1')).from('webhook_events as oldest').whereNull('oldest.dispatched_at').whereIn('oldest.type', [...gathering.types]).where('oldest.created_at', '<=', cutoff),
      ),
    );
  }
  return query.orderBy('created_at').limit(limit).forUpdate().skipLocked();
}

/**
 * Sets an event aside: marked handed on, with the error no subscriber got past, in a statement of its own
 * (the transaction that met the error is gone). Answers false when another relay took it meanwhile.
 */
export async function markUndeliverable(db: Knex, eventId: string, error: string): Promise<boolean> {
  return (await db('webhook_events').where({ id: eventId }).whereNull('dispatched_at').update({ dispatched_at: db.fn.now(), dispatch_error: error.slice(0, 2000) })) > 0;
}

export async function markDispatched(trx: Knex, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length > 0) await trx('webhook_events').whereIn('id', eventIds).update({ dispatched_at: trx.fn.now() });
}
