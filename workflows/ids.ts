import type { SearchAttributePair } from '@temporalio/common';
import { BillingKindKey, ContractIdKey, CustomerIdKey, OrganisationIdKey } from './search-attributes';

/**
 * Workflow ids and search attributes: what both sides use, the services that start workflows and the
 * workflows that start children. No workflow runtime here, so that src/ may import it.
 */

// ---------------------------------------------------------------------------------------------------------
// Workflow ids. They are business keys (one invoice, one workflow; a retried request finds the same one),
// and running workflows and recorded histories carry them: their formats never change.

export const invoiceWorkflowId = (invoiceId: string) => `invoice:${invoiceId}`;
export const contractWorkflowId = (contractId: string) => `contract:${contractId}`;
export const usageBatchWorkflowId = (batchId: string) => `usage-batch:${batchId}`;
export const usageChunkWorkflowId = (batchId: string, chunkIndex: number) => `usage-batch:${batchId}:chunk:${chunkIndex}`;
/**
 * An organisation's ingestion, fed batches by Update-with-start (group commit): one per shard
 * (USAGE_INGESTION_SHARDS), shard 0 under the organisation's id alone.
 */
export const usageIngestionWorkflowId = (organisationId: string, shard = 0) => (shard === 0 ? `usage-ingestion:${organisationId}` : `usage-ingestion:${organisationId}:${shard}`);

/** The ingestion shard of a batch among `shards`: a stable hash (FNV-1a) of its id. */
export function ingestionShardOf(batchId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < batchId.length; index += 1) hash = Math.imul(hash ^ batchId.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % shards;
}
/** One per group of batches written together, named by the group's first batch. */
export const usageGroupWorkflowId = (firstBatchId: string) => `usage-group:${firstBatchId}`;
export const exportWorkflowId = (jobId: string) => `export:${jobId}`;
/** Per organisation and item: another organisation naming the same id never joins (or blocks) its run. */
export const revenueSyncWorkflowId = (organisationId: string, invoiceItemId: string) => `revenue-sync:${organisationId}:${invoiceItemId}`;
export const invoiceRunWorkflowId = (runId: string) => `invoice-run:${runId}`;
export const webhookDeliveryWorkflowId = (deliveryId: string, generation: number) => `webhook-delivery:${deliveryId}:${generation}`;
export const emailWorkflowId = (emailId: string) => `email:${emailId}`;
export const creditNoteWorkflowId = (creditNoteId: string) => `credit-note:${creditNoteId}`;
export const creditExpiryWorkflowId = (lotId: string) => `credit-expiry:${lotId}`;
export const chatWorkflowId = (conversationId: string) => `chat:${conversationId}`;
/** One per meter definition: a redefinition (the next generation) fills anew under a workflow of its own. */
export const meterBackfillWorkflowId = (meterId: string, generation: number) => `meter-backfill:${meterId}:${generation}`;
/** One per metered entitlement: its periods' resets. */
export const entitlementPeriodWorkflowId = (entitlementId: string) => `entitlement-period:${entitlementId}`;
/** One per contract: usage arriving while it runs signals it to check again. */
export const progressiveBillingWorkflowId = (contractId: string) => `progressive-billing:${contractId}`;
/** One per invoice: its collection through the organisation's payment gateway, attempts and dunning. */
export const invoiceCollectionWorkflowId = (invoiceId: string) => `collection:${invoiceId}`;
/** One per credit note refunded through the gateway that collected its invoice. */
export const gatewayRefundWorkflowId = (creditNoteId: string) => `gateway-refund:${creditNoteId}`;
/** One Temporal Schedule per organisation with a gateway: its daily reconciliation; its runs get this id plus the scheduled time. */
export const paymentReconciliationScheduleId = (organisationId: string) => `payment-reconciliation:${organisationId}`;
export const paymentReconciliationWorkflowId = (organisationId: string) => `payment-reconciliation:${organisationId}`;
/** One Temporal Schedule per organisation and schedule; the workflows it starts get this id plus the scheduled time. */
export const invoiceRunScheduleId = (organisationId: string, scheduleId: string) => `invoice-run-schedule:${organisationId}:${scheduleId}`;
/** The one Temporal Schedule of the event table's daily upkeep (partitions, retention), and its workflow. */
export const USAGE_EVENT_STORAGE_SCHEDULE_ID = 'usage-event-storage';
export const USAGE_EVENT_STORAGE_WORKFLOW_ID = 'usage-event-storage';

// ---------------------------------------------------------------------------------------------------------
// Search attributes, the same for a workflow started by the API and one started as a child.

/**
 * The `BillingKind` search attribute of each workflow type: what operators filter on in the Temporal UI
 * (`BillingKind NOT IN ("webhook-delivery", "chatbot")` hides the deliveries and the conversations).
 * Stored in running workflows and visibility: a kind is never renamed.
 */
export const BILLING_KINDS = {
  usageBatchWorkflow: 'usage-batch',
  usageChunkWorkflow: 'usage-batch',
  usageIngestionWorkflow: 'usage-ingestion',
  usageGroupWorkflow: 'usage-batch',
  invoiceLifecycleWorkflow: 'invoice',
  revenueSyncWorkflow: 'revenue-sync',
  contractWorkflow: 'contract',
  exportWorkflow: 'export',
  invoiceRunWorkflow: 'invoice-run',
  webhookDeliveryWorkflow: 'webhook-delivery',
  emailDeliveryWorkflow: 'email',
  creditNoteWorkflow: 'credit-note',
  creditExpiryWorkflow: 'credit-expiry',
  chatConversationWorkflow: 'chatbot',
  meterBackfillWorkflow: 'meter-backfill',
  entitlementPeriodWorkflow: 'entitlement-period',
  progressiveBillingWorkflow: 'progressive-billing',
  invoiceCollectionWorkflow: 'collection',
  gatewayRefundWorkflow: 'gateway-refund',
  paymentReconciliationWorkflow: 'payment-reconciliation',
  usageEventStorageWorkflow: 'usage-event-storage',
} as const;

/** A workflow type that has a kind. */
export type KindedWorkflow = keyof typeof BILLING_KINDS;
export type BillingKind = (typeof BILLING_KINDS)[KindedWorkflow];

export interface SearchAttributeOwners {
  organisationId: string;
  customerId?: string | null;
  contractId?: string | null;
}

/** The `BillingKind` attribute of a workflow type. */
export function billingKindAttribute(workflowType: KindedWorkflow): SearchAttributePair {
  return { key: BillingKindKey, value: BILLING_KINDS[workflowType] };
}

/**
 * Start options (`typedSearchAttributes`) by which operators find a workflow in the Temporal UI. The typed
 * client adds `BillingKind` to every workflow it starts; a child, or a Schedule's action, names its
 * workflow type here to carry it too.
 */
export function searchAttributes({ organisationId, customerId, contractId }: SearchAttributeOwners, workflowType?: KindedWorkflow): { typedSearchAttributes: SearchAttributePair[] } {
  return {
    typedSearchAttributes: [
      { key: OrganisationIdKey, value: organisationId },
      ...(customerId ? [{ key: CustomerIdKey, value: customerId }] : []),
      ...(contractId ? [{ key: ContractIdKey, value: contractId }] : []),
      ...(workflowType ? [billingKindAttribute(workflowType)] : []),
    ],
  };
}
