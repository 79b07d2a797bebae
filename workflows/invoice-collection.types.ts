import { defineSignal } from '@temporalio/workflow';

/** The contract of `invoiceCollectionWorkflow`: its input, its Signal and its activities. */

export interface InvoiceCollectionInput {
  organisationId: string;
  invoiceId: string;
  /** Carried across continue-as-new: the failed attempt whose dunning wait was sat out. */
  retryAfterAttempt?: number;
}

/** A payment attempt's state (docs/payments.md). */
export type AttemptStatus = 'pending' | 'processing' | 'requires_action' | 'succeeded' | 'failed' | 'refunded';

/**
 * What an invoice's collection does next, decided from Postgres (so that a workflow reset or restarted
 * rebuilds from it): charge an attempt recorded as pending; record the payment of one that succeeded; wait
 * for the gateway on one in flight; wait out the dunning campaign's days after a failure; or stop.
 */
export type CollectionStep =
  | { next: 'charge'; attemptId: string }
  | { next: 'settle'; attemptId: string }
  | { next: 'await-gateway'; attemptId: string }
  | { next: 'wait'; afterAttempt: number; days: number }
  | { next: 'done'; reason: string };

export interface CollectionOutcome {
  reason: string;
}

/** Something changed (a webhook recorded the gateway's answer, the invoice was paid or cancelled): look again. */
export const collectionNudge = defineSignal('nudge');

export interface CollectionActivities {
  nextCollectionStep(input: { organisationId: string; invoiceId: string; retryAfterAttempt?: number }): Promise<CollectionStep>;
  chargeCollectionAttempt(input: { organisationId: string; attemptId: string }): Promise<AttemptStatus>;
  refreshCollectionAttempt(input: { organisationId: string; attemptId: string }): Promise<AttemptStatus>;
  /** Moves the invoice to paid through its own workflow, recording the attempt's payment. */
  settleCollectionAttempt(input: { organisationId: string; attemptId: string }): Promise<void>;
}
