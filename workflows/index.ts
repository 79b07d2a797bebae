// Every workflow the worker runs; this file is the worker's workflowsPath, and the typed client of
// src/temporal/workflows-client.ts knows each workflow by the name exported here. Workflow type names are
// stored in histories: renaming one is a breaking change.
export { usageBatchWorkflow, usageChunkWorkflow } from './usage-batch.workflow';
export { usageIngestionWorkflow, usageGroupWorkflow } from './usage-ingestion.workflow';
export { usageEventStorageWorkflow } from './usage-event-storage.workflow';
export { invoiceLifecycleWorkflow } from './invoice-lifecycle.workflow';
export { revenueSyncWorkflow } from './revenue-sync.workflow';
export { contractWorkflow } from './contract.workflow';
export { exportWorkflow } from './export.workflow';
export { invoiceRunWorkflow } from './invoice-run.workflow';
export { webhookDeliveryWorkflow } from './webhook-delivery.workflow';
export { emailDeliveryWorkflow } from './email-delivery.workflow';
export { creditNoteWorkflow } from './credit-note.workflow';
export { creditExpiryWorkflow } from './credit-expiry.workflow';
export { chatConversationWorkflow } from './chat.workflow';
export { meterBackfillWorkflow } from './meter-backfill.workflow';
export { entitlementPeriodWorkflow } from './entitlement-period.workflow';
export { progressiveBillingWorkflow } from './progressive-billing.workflow';
export { invoiceCollectionWorkflow } from './invoice-collection.workflow';
export { gatewayRefundWorkflow } from './gateway-refund.workflow';
export { paymentReconciliationWorkflow } from './payment-reconciliation.workflow';
