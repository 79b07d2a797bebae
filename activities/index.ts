import type { ChatbotAnswerService } from '../src/modules/chatbot';
import type { InvoiceService } from '../src/modules/invoices';
import type { Services } from '../src/services';
import { reportingFailures } from './adapter';
import { createChatbotActivities } from './chatbot.activities';
import { createContractActivities } from './contracts.activities';
import { createCreditNoteActivities } from './credit-notes.activities';
import { createCreditActivities } from './credits.activities';
import { createEmailActivities } from './emails.activities';
import { createExportActivities } from './export.activities';
import { createInvoiceRunActivities } from './invoice-runs.activities';
import { createInvoiceActivities } from './invoices.activities';
import { createRevenueActivities } from './revenue.activities';
import { createUsageActivities } from './usage.activities';
import { createWebhookActivities } from './webhooks.activities';

/**
 * Every activity the worker registers: one-line adapters over the services, each failure reported in
 * the error model's terms. Workflows proxy these types.
 */
/** Services that drive other workflows through the Temporal client. */
export interface WorkflowDrivers {
  invoices: InvoiceService;
  /** The chatbot answers with the services the API's routes use, some of which drive workflows. */
  chatbot: ChatbotAnswerService;
}

export function createActivities(services: Services, drivers: WorkflowDrivers) {
  return reportingFailures({
    ...createUsageActivities(services),
    ...createInvoiceActivities(services),
    ...createContractActivities(services),
    ...createExportActivities(services),
    ...createRevenueActivities(services),
    ...createInvoiceRunActivities(services, drivers),
    ...createWebhookActivities(services),
    ...createEmailActivities(services),
    ...createCreditNoteActivities(services),
    ...createCreditActivities(services),
    ...createChatbotActivities(drivers.chatbot),
  });
}

export type Activities = ReturnType<typeof createActivities>;
