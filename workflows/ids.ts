import type { SearchAttributePair } from '@temporalio/common';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from './search-attributes';

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
