import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { deterministicDatabaseError } from '../db/errors';
import { AppError, ERROR_KINDS, InvariantError } from '../domain/errors';
import { lockUndispatched, markDispatched, markUndeliverable, type Gathering, type OutboxEvent } from './outbox';

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
export async function relayOnce(deps: RelayStepDeps, batch: number): Promise<number> {
  try {
    return await handOn(deps, batch);
  } catch (error) {
    if (!(error instanceof StepFailure) || !isDeterministic(error.reason)) throw error;
    return setAsideUndeliverable(deps, batch);
  }
}

type RelayStepDeps = Pick<EventRelayDeps, 'db' | 'subscribers' | 'gathering'> & { logger?: Logger };

/** A failure of a step, with the events it had locked. */
class StepFailure extends Error {
  constructor(
    readonly events: readonly OutboxEvent[],
    readonly reason: unknown,
  ) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}

async function handOn(deps: Pick<EventRelayDeps, 'db' | 'subscribers' | 'gathering'>, batch: number): Promise<number> {
  let locked: OutboxEvent[] = [];
  const events = await deps.db
    .transaction(async (trx) => {
      locked = await lockUndispatched(trx, batch, deps.gathering);
      if (locked.length === 0) return locked;
      for (const subscriber of deps.subscribers) await subscriber.handle?.(trx, locked);
      await markDispatched(
        trx,
        locked.map((event) => event.id),
      );
      return locked;
    })
    .catch((error: unknown) => Promise.reject(new StepFailure(locked, error)));
  if (events.length > 0) for (const subscriber of deps.subscribers) subscriber.committed?.(events);
  return events.length;
}

/**
 * An error no retry can mend: a business refusal, a broken invariant or a programming error, or a statement
 * Postgres refuses for its data. Anything else (a lost connection, Temporal down) is waited out.
 */
function isDeterministic(error: unknown): boolean {
  if (error instanceof AppError) return !ERROR_KINDS[error.kind].retryable;
  if (error instanceof InvariantError || error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError || error instanceof ReferenceError) return true;
  return deterministicDatabaseError(error) !== undefined;
}

/**
 * A batch met a deterministic error: its events are handed on one at a time, in order, to find the one
 * no subscriber can take. That event, failing alone twice, is set aside with its error (logged, and kept
 * in `webhook_events.dispatch_error`); the events after it go on as usual. Answers how many were handed on
 * or set aside.
 */
async function setAsideUndeliverable(deps: RelayStepDeps, batch: number): Promise<number> {
  let done = 0;
  while (done < batch) {
    let failure: StepFailure | undefined;
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const handed = await handOn(deps, 1);
        if (handed === 0) return done;
        done += handed;
        failure = undefined;
        break;
      } catch (error) {
        if (!(error instanceof StepFailure) || !isDeterministic(error.reason) || error.events.length !== 1) throw error;
        failure = error;
      }
    }
    if (!failure) continue;
    const [event] = failure.events;
    if (await markUndeliverable(deps.db, event!.id, failure.message)) {
      deps.logger?.error({ err: failure.reason, eventId: event!.id, type: event!.type, organisationId: event!.organisation_id }, 'an event no subscriber can take was set aside undelivered');
    }
    return done + 1;
  }
  return done;
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
      deps.logger.warn({ err: error instanceof StepFailure ? error.reason : error }, 'the event relay failed; the events stay in the outbox and are tried again');
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
