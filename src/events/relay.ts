import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { lockUndispatched, markDispatched, type Gathering, type OutboxEvent } from './outbox';

/**
 * What reacts to the domain events. `handle` runs inside the relay's transaction, which also marks the
 * events handed on: if it throws, nothing of the batch is marked and every subscriber gets the batch again
 * later, so its work must be safe to repeat (a delivery keyed by its event, a workflow by its id).
 * `committed` runs once the batch is marked, for what cannot be taken back (counting them).
 */
export interface EventSubscriber {
  name: string;
  handle?: (trx: Knex.Transaction, events: readonly OutboxEvent[]) => Promise<void>;
  committed?: (events: readonly OutboxEvent[]) => void;
}

export interface EventRelayDeps {
  db: Knex;
  subscribers: readonly EventSubscriber[];
  logger: Logger;
  intervalMs?: number;
  batch?: number;
  /** Event types handed on together, once the oldest waiting has waited this long (see `lockUndispatched`). */
  gathering?: Gathering;
}

/**
 * One step of the relay: the oldest events not yet handed on, at most `batch` of them, go to every
 * subscriber in one transaction that marks them handed on (relays in several workers share the work
 * through SKIP LOCKED). Answers how many it handed on.
 */
export async function relayOnce(deps: Pick<EventRelayDeps, 'db' | 'subscribers' | 'gathering'>, batch: number): Promise<number> {
  const events = await deps.db.transaction(async (trx) => {
    const locked = await lockUndispatched(trx, batch, deps.gathering);
    if (locked.length === 0) return locked;
    for (const subscriber of deps.subscribers) await subscriber.handle?.(trx, locked);
    await markDispatched(
      trx,
      locked.map((event) => event.id),
    );
    return locked;
  });
  if (events.length > 0) for (const subscriber of deps.subscribers) subscriber.committed?.(events);
  return events.length;
}

/**
 * The outbox relay, in every worker: every `intervalMs` it hands the events on, batch after batch while
 * full batches keep coming. Postgres holds every event until then, so a crash or an outage of a
 * subscriber's dependency (Temporal, for webhooks) delays the reactions and loses none.
 */
export function startEventRelay(deps: EventRelayDeps): { stop: () => Promise<void> } {
  const intervalMs = deps.intervalMs ?? 250;
  const batch = deps.batch ?? 100;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const step = async () => {
    try {
      while (!stopped && (await relayOnce(deps, batch)) === batch);
    } catch (error) {
      deps.logger.warn({ err: error }, 'the event relay failed; the events stay in the outbox and are tried again');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = step().finally(schedule);
    }, intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
