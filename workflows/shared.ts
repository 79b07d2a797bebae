import { allHandlersFinished, ApplicationFailure, proxyActivities, proxyLocalActivities, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import { Mutex } from 'async-mutex';
import { AppError, BUSINESS_FAILURE_TYPES, fromApplicationFailure, toApplicationFailure } from '../src/domain/errors';

// Workflow ids and search attributes live in ./ids, which the services that start workflows import too.
export * from './ids';

// ---------------------------------------------------------------------------------------------------------
// Update handlers.

/**
 * Turn-taking for Update handlers: each workflow creates one and runs every state-changing handler under
 * `runExclusive`, so a transition sees the state the previous one left.
 */
export { Mutex };

/** No handler holds the lock or is still running: the moment a workflow may end or continue as new. */
export function idle(lock: Mutex): boolean {
  return !lock.isLocked() && allHandlersFinished();
}

/** What tenants read for a fault that is not a business failure: its text may be SQL, addresses, a stack. */
export const INTERNAL_FAILURE = 'an internal error stopped this work; operators find its cause in the history of its workflow';

/**
 * Why an activity (or child) failed, in words a tenant may read (a batch's or a backfill's `error`): a
 * business failure's messages; Temporal's own words for a timeout, a cancellation or a termination; for any
 * other fault (an error the code did not expect, such as a database's, whose message holds the statement)
 * only that it happened, since its cause stays in the workflow's history for operators.
 */
export function failureReason(error: unknown): string {
  const known = fromApplicationFailure(error);
  if (known) return known.items.map((item) => item.message).join('; ');
  let root = error;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  if (root instanceof ApplicationFailure) return INTERNAL_FAILURE;
  return root instanceof Error ? root.message : String(root);
}

/** The refusal of an illegal transition, as the API reports it (409, the conflict code). */
export function conflict(message: string): ApplicationFailure {
  return toApplicationFailure(AppError.conflict(message));
}

// ---------------------------------------------------------------------------------------------------------
// Activity profiles. Every one is bounded, so a deterministic failure ends instead of retrying forever, yet
// retries long enough to ride out a database that is away for a minute or two. Failures of our business
// kinds (validation, conflict, not found...) are never retried: the same input fails the same way.

/**
 * A bounded profile: exponential backoff from `firstRetry` up to `longestWait`, at most `attempts` tries
 * and, where `scheduleToCloseTimeout` is given, no later than that from the first schedule.
 */
function profile(timeouts: Pick<ActivityOptions, 'startToCloseTimeout' | 'heartbeatTimeout' | 'scheduleToCloseTimeout'>, backoff: { firstRetry: Duration; longestWait: Duration; attempts: number }): ActivityOptions {
  return {
    ...timeouts,
    retry: {
      initialInterval: backoff.firstRetry,
      backoffCoefficient: 2,
      maximumInterval: backoff.longestWait,
      maximumAttempts: backoff.attempts,
      nonRetryableErrorTypes: [...BUSINESS_FAILURE_TYPES],
    },
  };
}

/**
 * Short database transitions that heartbeat while they run (invoice steps and their undo): a dead worker
 * is noticed in 20 s. Backoff reaches its 10 s ceiling after ~15 s; 30 attempts span over four minutes.
 */
const invoiceStep = profile(
  { startToCloseTimeout: '1 minute', heartbeatTimeout: '20 seconds', scheduleToCloseTimeout: '10 minutes' },
  { firstRetry: '500 milliseconds', longestWait: '10 seconds', attempts: 30 },
);

/** Short database transitions that do not heartbeat (contract status, milestones, revenue re-derivation). */
const transition = profile(
  { startToCloseTimeout: '1 minute', scheduleToCloseTimeout: '10 minutes' },
  { firstRetry: '500 milliseconds', longestWait: '10 seconds', attempts: 30 },
);

/**
 * One usage chunk written to Postgres. The heartbeat timeout notices a dead worker in seconds; retries are
 * safe because each chunk stores its outcome with its events.
 */
const ingestion = profile(
  { startToCloseTimeout: '2 minutes', heartbeatTimeout: '10 seconds', scheduleToCloseTimeout: '15 minutes' },
  { firstRetry: '200 milliseconds', longestWait: '10 seconds', attempts: 40 },
);

/** A long export that heartbeats its progress; a retry resumes after the last page it recorded. */
const longExport = profile({ startToCloseTimeout: '1 hour', heartbeatTimeout: '30 seconds' }, { firstRetry: '1 second', longestWait: '30 seconds', attempts: 10 });

/** Recording the end of finished work (a job's result, a batch's summary): small, idempotent writes. */
const bookkeeping = profile(
  { startToCloseTimeout: '30 seconds', scheduleToCloseTimeout: '10 minutes' },
  { firstRetry: '1 second', longestWait: '15 seconds', attempts: 30 },
);

/**
 * A page of contracts billed by an invoice run in one transaction, heartbeating as it goes; a retry
 * skips the contracts already billed.
 */
const billing = profile(
  { startToCloseTimeout: '10 minutes', heartbeatTimeout: '20 seconds', scheduleToCloseTimeout: '1 hour' },
  { firstRetry: '1 second', longestWait: '30 seconds', attempts: 20 },
);

/**
 * One webhook attempt: a POST of at most 10 s and its log. The receiver's failures are the attempt's
 * answer, not the activity's; the activity retries only Postgres faults and a delivery whose dispatch has
 * not committed yet.
 */
const webhookAttempt = profile(
  { startToCloseTimeout: '30 seconds', scheduleToCloseTimeout: '5 minutes' },
  { firstRetry: '1 second', longestWait: '30 seconds', attempts: 10 },
);

/**
 * One message handed to the mail server. A server that is away or answers 4xx (greylisting, a full queue)
 * is tried again for about an hour: backoff from 5 s to a 10-minute ceiling, 12 attempts.
 */
const emailSend = profile(
  { startToCloseTimeout: '2 minutes', scheduleToCloseTimeout: '90 minutes' },
  { firstRetry: '5 seconds', longestWait: '10 minutes', attempts: 12 },
);

/**
 * One chatbot answer: reads and one write, heartbeating. It gives up within two minutes, so that a question
 * that cannot be answered does not hold its conversation's later questions for long.
 */
const chatTurn = profile(
  { startToCloseTimeout: '30 seconds', heartbeatTimeout: '10 seconds', scheduleToCloseTimeout: '2 minutes' },
  { firstRetry: '500 milliseconds', longestWait: '5 seconds', attempts: 10 },
);

/**
 * One call to a language model: slower than a database step (a model on a CPU may take a minute), so two
 * minutes an attempt, heartbeating, and three attempts at most; a refusal (4xx) is not retried.
 */
const modelCall = profile(
  { startToCloseTimeout: '2 minutes', heartbeatTimeout: '10 seconds', scheduleToCloseTimeout: '6 minutes' },
  { firstRetry: '1 second', longestWait: '10 seconds', attempts: 3 },
);

/**
 * One slice of a meter's backfill (a UTC day of events folded into rollups), heartbeating; a retry
 * redoes the slice, which replaces what it writes. Also the event table's daily upkeep (partitions,
 * retention), whose every step finds what is left to do in Postgres.
 */
const backfill = profile(
  { startToCloseTimeout: '10 minutes', heartbeatTimeout: '30 seconds', scheduleToCloseTimeout: '1 hour' },
  { firstRetry: '1 second', longestWait: '30 seconds', attempts: 20 },
);

/**
 * A few calls to a payment gateway (each up to STRIPE_TIMEOUT_MS, tried three times) and the record of
 * their answer, heartbeating. A network fault, a rate limit or a 5xx is
 * tried again for about half an hour (backoff from 2 s to a minute, 20 attempts), and a dead worker is
 * noticed in 20 s by its missing heartbeat; the charge's idempotency
 * key and its lookup by metadata make a retry charge once. A refusal of the request is an answer, not a fault.
 */
const gatewayCall = profile(
  { startToCloseTimeout: '5 minutes', heartbeatTimeout: '20 seconds', scheduleToCloseTimeout: '30 minutes' },
  { firstRetry: '2 seconds', longestWait: '1 minute', attempts: 20 },
);

export const ACTIVITY_PROFILES = { invoiceStep, backfill, gatewayCall, transition, ingestion, longExport, bookkeeping, billing, webhookAttempt, emailSend, chatTurn, modelCall } as const satisfies Record<string, ActivityOptions>;

/**
 * Local activities: run by the worker that runs the workflow task, inside that task, so that a short step
 * costs no round trip through the server. A local profile is its regular profile's timeouts and retry
 * policy (bounded, business failures never retried), less the heartbeat a local activity has no use for;
 * a local activity that keeps failing past `localRetryThreshold` is retried on a timer of the server instead.
 */
function local({ startToCloseTimeout, scheduleToCloseTimeout, retry }: ActivityOptions): LocalActivityOptions {
  return { startToCloseTimeout, scheduleToCloseTimeout, retry, localRetryThreshold: '10 seconds' };
}

/**
 * The steps of an invoice or credit note Update and their undo, inside the workflow task that received
 * the Update. A usage chunk written inside its child's only workflow task, and the batch's summary inside
 * the task that receives the last chunk's result: a worker that dies mid-chunk loses the task; the server
 * gives it to another worker once the task times out, and the chunk, idempotent, runs again there.
 */
export const LOCAL_ACTIVITY_PROFILES = {
  invoiceStep: local(invoiceStep),
  ingestion: local(ingestion),
  bookkeeping: local(bookkeeping),
} as const satisfies Record<string, LocalActivityOptions>;

/**
 * The activities `A` (an interface of a workflow's contract file), called under the named profile: an
 * activity's profile is fixed by the proxy it is called through, and every proxy is made here.
 */
export function activitiesOf<A>(profile: keyof typeof ACTIVITY_PROFILES) {
  return proxyActivities<A>(ACTIVITY_PROFILES[profile]);
}

/** The activities `A` as local activities, under the named local profile (see LOCAL_ACTIVITY_PROFILES). */
export function localActivitiesOf<A>(profile: keyof typeof LOCAL_ACTIVITY_PROFILES) {
  return proxyLocalActivities<A>(LOCAL_ACTIVITY_PROFILES[profile]);
}
