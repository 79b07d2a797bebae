import type { Knex } from 'knex';
import { requireSetting, type Config } from './config';
import { createMailer, type Mailer } from './mail/mailer';
import { createTemplateRenderer, templateBudgetFrom, type TemplateRenderer } from './mail/templating';
import { createAddressService } from './modules/addresses/addresses.service';
import { createAppService } from './modules/apps/apps.service';
import { createAttributeService } from './modules/attributes/attributes.service';
import { createOrganisationAttributeService } from './modules/attributes/organisation-attributes.service';
import type { AccessTokenIssuer } from './modules/auth/access-tokens';
import { createAuthService, createSessionVersions } from './modules/auth/auth.service';
import { createBillingPlanService } from './modules/billing-plans/billing-plans.service';
import { createCatalogService } from './modules/catalog/catalog.service';
import { createCollectionsService } from './modules/collections/collections.service';
import { createContactGroupService } from './modules/contact-groups/contact-groups.service';
import { createContractLifecycleService } from './modules/contracts/contract-lifecycle.service';
import { createPlanChangeLifecycleService } from './modules/contracts/plan-change-lifecycle.service';
import { resolveContractPlan } from './modules/contracts/contract-plans.repository';
import { createContractRepository } from './modules/contracts/contracts.repository';
import { createContractService } from './modules/contracts/contracts.service';
import { createCustomerService } from './modules/customers/customers.service';
import { createCreditNoteLifecycleService } from './modules/credit-notes/credit-note-lifecycle.service';
import { createCreditNoteService } from './modules/credit-notes/credit-notes.service';
import type { ModelSettings } from './modules/chatbot/model-engine';
import { createChatbotService } from './modules/chatbot/chatbot.service';
import { createCreditGrantService, createCreditService } from './modules/credits/credits.service';
import { createCouponService } from './modules/coupons/coupons.service';
import { createEmailTemplateService } from './modules/email-templates/email-templates.service';
import { createEmailSendingService } from './modules/emails/email-sending.service';
import { createEmailService } from './modules/emails/emails.service';
import { createEntityService } from './modules/entities/entities.service';
import { createFsmService } from './modules/fsm/fsm.service';
import { createFxRateService } from './modules/fx-rates/fx-rates.service';
import { createHealthService } from './modules/health/health.service';
import { createIdempotencyService } from './modules/idempotency/idempotency.service';
import { createInvoiceRepository } from './modules/invoices/invoices.repository';
import { createInvoiceRunControlService } from './modules/invoice-runs/invoice-run-control.service';
import { createInvoiceTemplateService } from './modules/invoice-templates/invoice-templates.service';
import { destinationPolicy, type DestinationPolicy } from './modules/webhooks/destination';
import { createWebhookDeliveryControl } from './modules/webhooks/webhook-deliveries';
import type { TriggerSubject } from './modules/webhooks/triggers';
import { createWebhookService } from './modules/webhooks/webhooks.service';
import { createChargeService } from './modules/charges/charges.service';
import { createInvoiceRunService, type InvoiceRunPaging } from './modules/invoice-runs/invoice-runs.service';
import { createInvoiceFileService } from './modules/invoices/invoice-files.service';
import { createInvoiceItemService } from './modules/invoices/invoice-items.service';
import { createInvoiceLifecycleService } from './modules/invoices/invoice-lifecycle.service';
import { createInvoiceService } from './modules/invoices/invoices.service';
import { createInvoiceRunScheduleService } from './modules/invoice-run-schedules/invoice-run-schedules.service';
import { createJobControlService } from './modules/jobs/job-control.service';
import { createJobService } from './modules/jobs/jobs.service';
import { createMeterService } from './modules/meters/meters.service';
import { createExportService } from './modules/objects/exports.service';
import { createObjectExportService } from './modules/objects/object-export.service';
import { createObjectService } from './modules/objects/objects.service';
import { createOrganisationSettingsService } from './modules/organisation-settings/settings.service';
import { createPaymentRepository } from './modules/payments/payments.repository';
import { createPaymentService } from './modules/payments/payments.service';
import { createRevenueSyncService } from './modules/revenue/revenue-sync.service';
import { createRevenueService } from './modules/revenue/revenue.service';
import { createUsageIngestionService } from './modules/usage/usage-ingestion.service';
import { createUsageRepository } from './modules/usage/usage.repository';
import { createUsageService } from './modules/usage/usage.service';
import { createApiMetrics } from './observability/metrics';
import type { FileStorage } from './storage/file-storage';
import type { Logger } from 'pino';
import { storagesFrom } from './storage/storage-from-config';
import { createSecretBox, type SecretBox } from './security/secret-box';
import type { TemporalHandle, WorkflowServiceDeps } from './temporal/client';

/** What every service is built from. */
export interface ServiceDeps {
  db: Knex;
  /** The process's own log, for what tenants must not read (why a webhook destination was refused). */
  logger?: Logger;
  mailer: Mailer;
  /** Renders e-mail templates in worker threads, within the configured budget. */
  templates: TemplateRenderer;
  /** Uploaded invoice documents. */
  storage: FileStorage;
  /** Export CSVs: written by the worker, downloaded through the API. */
  exports: FileStorage;
  /** How long a refresh token lives. */
  refreshTokenTtlDays: number;
  /** How an invoice run pages its contracts (the worker's setting is the one that counts). */
  invoiceRunPaging: InvoiceRunPaging;
  /** Where webhooks may be sent. */
  webhookPolicy: DestinationPolicy;
  /** Seals the secrets kept in Postgres. */
  secrets: SecretBox;
  /** The chatbot's language model, when one is configured: the model engine answers then. */
  chatbotModel?: ModelSettings;
  /** How old the API's metrics may let the counts by status get before reading them again. */
  metricsCountsMaxAgeSeconds?: number;
}

/** The dependencies of the services as the configuration sets them up. */
export function serviceDepsFrom(config: Config, db: Knex): ServiceDeps {
  const storages = storagesFrom(config);
  return {
    db,
    mailer: createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, dataDir: config.DATA_DIR }),
    templates: createTemplateRenderer(templateBudgetFrom(config)),
    storage: storages['invoice-files'],
    exports: storages.exports,
    refreshTokenTtlDays: config.REFRESH_TOKEN_TTL_DAYS,
    invoiceRunPaging: { pageSize: config.INVOICE_RUN_PAGE_SIZE, pagesInFlight: config.INVOICE_RUN_PAGES_IN_FLIGHT },
    webhookPolicy: destinationPolicy(config),
    secrets: createSecretBox(requireSetting(config, 'SECRETS_KEY'), config.SECRETS_KEYS_PREVIOUS),
    metricsCountsMaxAgeSeconds: config.METRICS_COUNTS_MAX_AGE_SECONDS,
    ...(config.CHATBOT_LLM_BASE_URL && config.CHATBOT_LLM_MODEL
      ? { chatbotModel: { baseUrl: config.CHATBOT_LLM_BASE_URL, model: config.CHATBOT_LLM_MODEL, ...(config.CHATBOT_LLM_API_KEY ? { apiKey: config.CHATBOT_LLM_API_KEY } : {}) } }
      : {}),
  };
}

/**
 * The composition root: every module's service, built once. Routes and activities receive these and
 * never reach past them to a repository or to SQL of another module.
 */
export function createServices(deps: ServiceDeps) {
  const { db } = deps;
  const attributes = createAttributeService(db);
  const invoiceRuns = createInvoiceRunService(db, deps.invoiceRunPaging);
  return {
    // Reference data
    addresses: createAddressService(db),
    contactGroups: createContactGroupService(db),
    customers: createCustomerService(db),
    entities: createEntityService(db),
    // Money
    fxRates: createFxRateService(db),
    payments: createPaymentService(db),
    revenue: createRevenueService(db),
    // Invoices
    invoiceItems: createInvoiceItemService(db, (trx, draft) => invoiceRuns.repriceDraft(trx, draft)),
    invoiceFiles: createInvoiceFileService(deps),
    invoiceLifecycle: createInvoiceLifecycleService(deps),
    creditNoteLifecycle: createCreditNoteLifecycleService(deps),
    credits: createCreditService(deps),
    coupons: createCouponService(db),
    collections: createCollectionsService(deps),
    invoiceRuns,
    charges: createChargeService(db),
    // Usage, plans and contracts
    meters: createMeterService(db),
    usageIngestion: createUsageIngestionService(db),
    billingPlans: createBillingPlanService(db),
    contractLifecycle: createContractLifecycleService(db),
    planChangeLifecycle: createPlanChangeLifecycleService(db),
    // Objects and jobs
    objects: createObjectService(db),
    objectExports: createObjectExportService(deps),
    jobs: createJobService(deps),
    // Organisation, catalog and integrations
    organisationSettings: createOrganisationSettingsService(db),
    organisationAttributes: createOrganisationAttributeService(db),
    attributes,
    catalog: createCatalogService(db, attributes),
    apps: createAppService(db),
    webhooks: createWebhookService({ db, policy: deps.webhookPolicy, secrets: deps.secrets, ...(deps.logger ? { logger: deps.logger } : {}) }),
    emailTemplates: createEmailTemplateService(db, deps.templates),
    invoiceTemplates: createInvoiceTemplateService(db),
    emails: createEmailService(deps),
  };
}

export type Services = ReturnType<typeof createServices>;

/** The API's services: the data services plus those that drive workflows through the Temporal client. */
export function createApiServices(deps: ServiceDeps & { temporal: TemporalHandle; accessTokens: AccessTokenIssuer }) {
  const services = createServices(deps);
  const workflowDeps: WorkflowServiceDeps = { db: deps.db, temporal: deps.temporal };
  const apiServices = {
    ...services,
    invoices: createInvoiceService(workflowDeps, resolveContractPlan),
    creditNotes: createCreditNoteService(workflowDeps),
    creditGrants: createCreditGrantService({ ...workflowDeps, credits: services.credits }),
    chatbot: createChatbotService({ ...workflowDeps, engine: deps.chatbotModel ? 'model' : 'builtin' }),
    revenueSync: createRevenueSyncService(workflowDeps),
    contracts: createContractService(workflowDeps),
    usage: createUsageService(workflowDeps),
    exports: createExportService(workflowDeps),
    invoiceRunControl: createInvoiceRunControlService({ ...workflowDeps, invoiceRuns: services.invoiceRuns }),
    invoiceRunSchedules: createInvoiceRunScheduleService(workflowDeps),
    jobControl: createJobControlService({ ...workflowDeps, exports: deps.exports, jobs: services.jobs }),
    emailSending: createEmailSendingService({ ...workflowDeps, emails: services.emails }),
  };
  // A triggered event carries the object as the API shows it, with what tells whether it is in the event's state.
  const webhooks = createWebhookService({
    db: deps.db,
    policy: deps.webhookPolicy,
    secrets: deps.secrets,
    resolveObject: async (organisationId, kind, objectId): Promise<TriggerSubject> => {
      switch (kind) {
        case 'invoice': {
          const data = await apiServices.invoices.get(organisationId, objectId);
          const reminded = (await createInvoiceRepository(deps.db).reminderDays(objectId)).length > 0;
          return { data, facts: { kind, status: data.status, reminded } };
        }
        case 'invoice_run': {
          const data = await apiServices.invoiceRunControl.view(organisationId, objectId);
          return { data, facts: { kind, status: data.status } };
        }
        case 'contract': {
          const data = await apiServices.contracts.requireContract(organisationId, objectId);
          const resumedOnce = await createContractRepository(deps.db).wasResumed(organisationId, objectId);
          return { data, facts: { kind, status: data.status, resumedOnce } };
        }
        case 'payment': {
          const data = await services.payments.getById(organisationId, objectId);
          // Payments recorded by marking an invoice paid, and refunds, carry keys the server made; neither sends payment.created.
          const row = (await createPaymentRepository(deps.db).findById(organisationId, objectId))!;
          const recordedBy = row.credit_note_id ? 'refund' : row.idempotency_scope === 'system' ? 'invoice' : 'api';
          return { data, facts: { kind, recordedBy, invoiceId: row.invoice_id, creditNoteId: row.credit_note_id } };
        }
        case 'credit_note': {
          const data = await apiServices.creditNotes.get(organisationId, objectId);
          return { data, facts: { kind, status: data.status } };
        }
        case 'usage_batch': {
          const data = await apiServices.usage.batch(organisationId, objectId);
          return { data, facts: { kind, status: data.status } };
        }
      }
    },
  });
  return {
    ...apiServices,
    webhooks,
    webhookDeliveries: createWebhookDeliveryControl({ ...workflowDeps, webhooks }),
    auth: createAuthService({ db: deps.db, accessTokens: deps.accessTokens, refreshTokenTtlDays: deps.refreshTokenTtlDays }),
    sessionVersions: createSessionVersions(deps.db),
    health: createHealthService(workflowDeps),
    idempotency: createIdempotencyService(deps.db, deps.secrets),
    // Served on the metrics port; the counts by status are read through each table's own repository, at
    // most once per METRICS_COUNTS_MAX_AGE_SECONDS.
    metrics: createApiMetrics({
      db: deps.db,
      taskQueue: deps.temporal.taskQueue,
      countsMaxAgeSeconds: deps.metricsCountsMaxAgeSeconds,
      usageBatchesByStatus: (db) => createUsageRepository(db).countBatchesByStatus(),
      invoicesByStatus: (db) => createInvoiceRepository(db).countByStatus(),
    }),
    // Custom lifecycles run through the same invoice and contract services as their own endpoints.
    fsm: createFsmService({ db: deps.db, invoices: apiServices.invoices, contracts: apiServices.contracts }),
  };
}

export type ApiServices = ReturnType<typeof createApiServices>;
