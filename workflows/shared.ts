import { allHandlersFinished, proxyActivities, proxyLocalActivities, type ActivityOptions, type ApplicationFailure, type LocalActivityOptions } from '@temporalio/workflow';
import type { Duration, SearchAttributePair } from '@temporalio/common';
import { Mutex } from 'async-mutex';
import type { ChatbotActivities } from '../activities/chatbot.activities';
import type { ContractActivities } from '../activities/contracts.activities';
import type { CreditNoteActivities } from '../activities/credit-notes.activities';
import type { CreditActivities } from '../activities/credits.activities';
import type { EmailActivities } from '../activities/emails.activities';
import type { ExportActivities } from '../activities/export.activities';
import type { InvoiceRunActivities } from '../activities/invoice-runs.activities';
import type { InvoiceActivities } from '../activities/invoices.activities';
import type { RevenueActivities } from '../activities/revenue.activities';
import type { UsageActivities } from '../activities/usage.activities';
import type { WebhookActivities } from '../activities/webhooks.activities';
import { AppError, BUSINESS_FAILURE_TYPES, toApplicationFailure } from '../src/domain/errors';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from './search-attributes';

// ---------------------------------------------------------------------------------------------------------
// Workflow ids. They are business keys (one invoice, one workflow; a retried request finds the same one),
// and running workflows and recorded histories carry them: their formats never change.

export const invoiceWorkflowId = (invoiceId: string) => `invoice:${invoiceId}`;
export const contractWorkflowId = (contractId: string) => `contract:${contractId}`;
export const usageBatchWorkflowId = (batchId: string) => `usage-batch:${batchId}`;
export const usageChunkWorkflowId = (batchId: string, chunkIndex: number) => `usage-batch:${batchId}:chunk:${chunkIndex}`;
export const exportWorkflowId = (jobId: string) => `export:${jobId}`;
export const revenueSyncWorkflowId = (invoiceItemId: string) => `revenue-sync:${invoiceItemId}`;
export const invoiceRunWorkflowId = (runId: string) => `invoice-run:${runId}`;
export const webhookDeliveryWorkflowId = (deliveryId: string, generation: number) => `webhook-delivery:${deliveryId}:${generation}`;
export const emailWorkflowId = (emailId: string) => `email:${emailId}`;
export const creditNoteWorkflowId = (creditNoteId: string) => `credit-note:${creditNoteId}`;
export const creditExpiryWorkflowId = (lotId: string) => `credit-expiry:${lotId}`;
export const chatWorkflowId = (conversationId: string) => `chat:${conversationId}`;
/** One Temporal Schedule per organisation and schedule; the workflows it starts get this id plus the scheduled time. */
export const invoiceRunScheduleId = (organisationId: string, scheduleId: string) => `invoice-run-schedule:${organisationId}:${scheduleId}`;

// ---------------------------------------------------------------------------------------------------------
// Search attributes, the same for a workflow started by the API and one started as a child.

export interface SearchAttributeOwners {
  organisationId: string;
  customerId?: string | null;
  contractId?: string | null;
}

/** Start options (`typedSearchAttributes`) by which operators find a workflow in the Temporal UI. */
export function searchAttributes({ organisationId, customerId, contractId }: SearchAttributeOwners): { typedSearchAttributes: SearchAttributePair[] } {
  return {
    typedSearchAttributes: [
      { key: OrganisationIdKey, value: organisationId },
      ...(customerId ? [{ key: CustomerIdKey, value: customerId }] : []),
      ...(contractId ? [{ key: ContractIdKey, value: contractId }] : []),
    ],
  };
}

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

export const ACTIVITY_PROFILES = { invoiceStep, transition, ingestion, longExport, bookkeeping, billing, webhookAttempt, emailSend, chatTurn, modelCall } as const satisfies Record<string, ActivityOptions>;

/**
 * Local activities: run by the worker that runs the workflow task, inside that task, so that a short step
 * costs no round trip through the server. Each profile is bounded like the others; a local activity that
 * keeps failing past `localRetryThreshold` is retried on a timer of the server instead.
 */
const invoiceStepLocal: LocalActivityOptions = {
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '10 minutes',
  localRetryThreshold: '10 seconds',
  retry: invoiceStep.retry,
};

/**
 * A usage chunk written inside its child's only workflow task, and the batch's summary inside the task
 * that receives the last chunk's result. A worker that dies mid-chunk loses the task; the server gives it
 * to another worker once the task times out, and the chunk, idempotent, runs again there.
 */
const ingestionLocal: LocalActivityOptions = {
  startToCloseTimeout: ingestion.startToCloseTimeout,
  scheduleToCloseTimeout: ingestion.scheduleToCloseTimeout,
  localRetryThreshold: '10 seconds',
  retry: ingestion.retry,
};
const bookkeepingLocal: LocalActivityOptions = {
  startToCloseTimeout: bookkeeping.startToCloseTimeout,
  scheduleToCloseTimeout: bookkeeping.scheduleToCloseTimeout,
  localRetryThreshold: '10 seconds',
  retry: bookkeeping.retry,
};

export const LOCAL_ACTIVITY_PROFILES = { invoiceStep: invoiceStepLocal, ingestion: ingestionLocal, bookkeeping: bookkeepingLocal } as const satisfies Record<
  string,
  LocalActivityOptions
>;

// One proxy per profile: an activity's profile is fixed by the proxy it is called through.
export const invoiceStepActivities = proxyActivities<InvoiceActivities>(ACTIVITY_PROFILES.invoiceStep);
/** The steps of an invoice Update and their undo, run inside the workflow task (see LOCAL_ACTIVITY_PROFILES). */
export const invoiceStepLocalActivities = proxyLocalActivities<InvoiceActivities>(LOCAL_ACTIVITY_PROFILES.invoiceStep);
/** A credit note's steps, like an invoice's: short transactions inside the workflow task that received the Update. */
export const creditNoteStepLocalActivities = proxyLocalActivities<Omit<CreditNoteActivities, 'mailCreditNote'>>(LOCAL_ACTIVITY_PROFILES.invoiceStep);
export const creditNoteMailActivities = proxyActivities<Pick<CreditNoteActivities, 'mailCreditNote'>>(ACTIVITY_PROFILES.emailSend);
export const transitionActivities = proxyActivities<ContractActivities & RevenueActivities>(ACTIVITY_PROFILES.transition);
export const ingestionActivities = proxyActivities<Pick<UsageActivities, 'ingestUsageChunk'>>(ACTIVITY_PROFILES.ingestion);
export const ingestionLocalActivities = proxyLocalActivities<Pick<UsageActivities, 'ingestUsageChunk'>>(LOCAL_ACTIVITY_PROFILES.ingestion);
export const bookkeepingLocalActivities = proxyLocalActivities<Pick<UsageActivities, 'completeUsageBatch'>>(LOCAL_ACTIVITY_PROFILES.bookkeeping);
export const longExportActivities = proxyActivities<Pick<ExportActivities, 'exportObjects'>>(ACTIVITY_PROFILES.longExport);
export const billingActivities = proxyActivities<Pick<InvoiceRunActivities, 'billContracts' | 'advanceRunInvoices'>>(ACTIVITY_PROFILES.billing);
export const webhookActivities = proxyActivities<WebhookActivities>(ACTIVITY_PROFILES.webhookAttempt);
export const emailActivities = proxyActivities<Pick<EmailActivities, 'deliverEmail'>>(ACTIVITY_PROFILES.emailSend);
export const creditActivities = proxyActivities<CreditActivities>(ACTIVITY_PROFILES.bookkeeping);
export const chatbotActivities = proxyActivities<Omit<ChatbotActivities, 'chatModelStep'>>(ACTIVITY_PROFILES.chatTurn);
export const modelActivities = proxyActivities<Pick<ChatbotActivities, 'chatModelStep'>>(ACTIVITY_PROFILES.modelCall);
export const bookkeepingActivities = proxyActivities<
  Pick<ExportActivities, 'finishJob'> &
    Pick<UsageActivities, 'completeUsageBatch' | 'failUsageBatch'> &
    Pick<InvoiceActivities, 'invoiceUndoWindow' | 'invoiceSnapshot'> &
    Pick<InvoiceRunActivities, 'beginInvoiceRun' | 'finishInvoiceRun'> &
    Pick<EmailActivities, 'failEmail'>
>(
  ACTIVITY_PROFILES.bookkeeping,
);
