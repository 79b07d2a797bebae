import type { ChatbotAnswerService } from '../src/modules/chatbot';
import type { InvoiceService } from '../src/modules/invoices';
import type { Services } from '../src/services';
import type { ChatbotActivities } from '../workflows/chat.types';
import type { ContractActivities } from '../workflows/contract.types';
import type { CreditActivities } from '../workflows/credit-expiry.types';
import type { CreditNoteActivities } from '../workflows/credit-note.types';
import type { EmailActivities } from '../workflows/email-delivery.types';
import type { EntitlementPeriodActivities } from '../workflows/entitlement-period.types';
import type { ExportActivities } from '../workflows/export.types';
import type { CollectionActivities } from '../workflows/invoice-collection.types';
import type { GatewayRefundActivities } from '../workflows/gateway-refund.types';
import type { PaymentReconciliationActivities } from '../workflows/payment-reconciliation.types';
import type { InvoiceActivities } from '../workflows/invoice-lifecycle.types';
import type { InvoiceRunActivities } from '../workflows/invoice-run.types';
import type { MeterBackfillActivities } from '../workflows/meter-backfill.types';
import type { ProgressiveBillingActivities } from '../workflows/progressive-billing.types';
import type { RevenueActivities } from '../workflows/revenue-sync.types';
import type { UsageActivities } from '../workflows/usage-batch.types';
import type { UsageEventStorageActivities } from '../workflows/usage-event-storage.types';
import type { UsageGroupActivities } from '../workflows/usage-ingestion.types';
import type { WebhookActivities } from '../workflows/webhook-delivery.types';
import { reportingFailures } from './adapter';
import { createChatbotActivities } from './chatbot.activities';
import { createContractActivities } from './contracts.activities';
import { createCreditNoteActivities } from './credit-notes.activities';
import { createCreditActivities } from './credits.activities';
import { createEmailActivities } from './emails.activities';
import { createEntitlementActivities } from './entitlements.activities';
import { createExportActivities } from './export.activities';
import { createInvoiceRunActivities } from './invoice-runs.activities';
import type { InvoiceRunScheduleService } from '../src/modules/invoice-run-schedules';
import { createInvoiceActivities } from './invoices.activities';
import { createMeterActivities } from './meters.activities';
import { createPaymentActivities } from './payments.activities';
import { createRevenueActivities } from './revenue.activities';
import { createUsageActivities } from './usage.activities';
import { createWebhookActivities } from './webhooks.activities';

/** Services that drive other workflows through the Temporal client. */
export interface WorkflowDrivers {
  invoices: InvoiceService;
  /** The chatbot answers with the services the API's routes use, some of which drive workflows. */
  chatbot: ChatbotAnswerService;
  /** A run its Temporal Schedule started checks that the schedule still exists. */
  schedules: Pick<InvoiceRunScheduleService, 'dropIfOrphan'>;
}

/**
 * Every activity the worker registers, as the workflows' contract files (workflows/*.types.ts) declare
 * them: each factory is typed against its interface.
 */
export type Activities = ChatbotActivities &
  CollectionActivities &
  GatewayRefundActivities &
  PaymentReconciliationActivities &
  ContractActivities &
  CreditActivities &
  CreditNoteActivities &
  EmailActivities &
  EntitlementPeriodActivities &
  ExportActivities &
  InvoiceActivities &
  InvoiceRunActivities &
  MeterBackfillActivities &
  ProgressiveBillingActivities &
  RevenueActivities &
  UsageActivities &
  UsageGroupActivities &
  UsageEventStorageActivities &
  WebhookActivities;

/** One-line adapters over the services, each failure reported in the error model's terms. */
export function createActivities(services: Services, drivers: WorkflowDrivers): Activities {
  return reportingFailures({
    ...createUsageActivities(services),
    ...createMeterActivities(services),
    ...createEntitlementActivities(services),
    ...createInvoiceActivities(services),
    ...createContractActivities(services),
    ...createExportActivities(services),
    ...createRevenueActivities(services),
    ...createInvoiceRunActivities(services, drivers),
    ...createPaymentActivities(services, drivers),
    ...createWebhookActivities(services),
    ...createEmailActivities(services),
    ...createCreditNoteActivities(services),
    ...createCreditActivities(services),
    ...createChatbotActivities(drivers.chatbot),
  });
}
