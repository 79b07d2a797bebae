import type { Knex } from 'knex';
import { requireSetting, type Config } from './config';
import { createMailer, type Mailer } from './mail/mailer';
import { createTemplateRenderer, templateBudgetFrom, type TemplateRenderer } from './mail/templating';
import { createAddressService, createCustomerService, createEntityService } from './modules/customers';
import { createAppService, type AccessTokenIssuer, createAuthService, createSessionVersions } from './modules/auth';
import { createAttributeService, createOrganisationAttributeService } from './modules/attributes';
import { createBillingPlanService, plansIn } from './modules/billing-plans';
import { createCatalogService } from './modules/catalog';
import { createCollectionsService } from './modules/collections';
import { createContactGroupService } from './modules/contact-groups';
import { createContractLifecycleService, createPlanChangeLifecycleService, createCreditNoteLifecycleService, createInvoiceLifecycleService } from './modules/lifecycles';
import { contractCurrency, contractCustomerUse, contractPlanUse, contractsIn, createContractService, resolveContractPlan } from './modules/contracts';
import { createCreditNoteService } from './modules/credit-notes';
import { type ModelSettings, createChatbotService } from './modules/chatbot';
import { createCreditGrantService, createCreditService } from './modules/credits';
import { createCouponService } from './modules/coupons';
import { createAlertService, type PeriodSpend } from './modules/alerts';
import { createEmailTemplateService } from './modules/email-templates';
import { createEntitlementPeriodService, createEntitlementService } from './modules/entitlements';
import { createEmailSendingService, createEmailService } from './modules/emails';
import { createFsmService } from './modules/fsm';
import { createFxRateService } from './modules/fx-rates';
import { createHealthService } from './modules/health';
import { createIdempotencyService } from './modules/idempotency';
import { invoicesIn, createInvoiceFileService, createInvoiceItemService, createInvoiceService } from './modules/invoices';
import { createInvoiceRunControlService, createInvoiceRunService, createProgressiveBillingService, periodToDateUsage, type InvoiceRunPaging } from './modules/invoice-runs';
import { createInvoiceTemplateService } from './modules/invoice-templates';
import { destinationPolicy, type DestinationPolicy, createWebhookDeliveryControl, type TriggerSubject, createWebhookService } from './modules/webhooks';
import { chargesIn, createChargeService } from './modules/charges';
import { createInvoiceRunScheduleService } from './modules/invoice-run-schedules';
import { createJobControlService, createJobService } from './modules/jobs';
import { createMeterBackfillService, createMeterService, metersIn, type MeterUses } from './modules/meters';
import { createExportService, createObjectExportService, createObjectService } from './modules/objects';
import { createOrganisationSettingsService } from './modules/organisation-settings';
import { paymentsIn, createPaymentService, createCollectionService, createPaymentGatewayService, nudgeCollection, ensureReconciliationSchedule, type StripeEndpoint } from './modules/payments';
import { createRevenueSyncService, createRevenueService } from './modules/revenue';
import { invoiceSettlements } from './modules/settlements';
import { createUsageIngestionService, usageIn, createUsageService, createUsageEventStorageService, type RollupMetersOf } from './modules/usage';
import { meterBackfillWorkflowId, searchAttributes } from '../workflows/ids';
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
  /** Where the Stripe adapter calls. */
  stripe: StripeEndpoint;
  /** The chatbot's language model, when one is configured: the model engine answers then. */
  chatbotModel?: ModelSettings;
  /** Seconds without a question after which a chatbot conversation's workflow ends. */
  chatbotIdleSeconds: number;
  /** Ingestion workflows per organisation (USAGE_INGESTION_SHARDS). */
  usageIngestionShards: number;
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
    stripe: { apiBase: config.STRIPE_API_BASE, timeoutMs: config.STRIPE_TIMEOUT_MS },
    metricsCountsMaxAgeSeconds: config.METRICS_COUNTS_MAX_AGE_SECONDS,
    chatbotIdleSeconds: config.CHATBOT_IDLE_SECONDS,
    usageIngestionShards: config.USAGE_INGESTION_SHARDS,
    ...(config.CHATBOT_LLM_BASE_URL && config.CHATBOT_LLM_MODEL
      ? { chatbotModel: { baseUrl: config.CHATBOT_LLM_BASE_URL, model: config.CHATBOT_LLM_MODEL, ...(config.CHATBOT_LLM_API_KEY ? { apiKey: config.CHATBOT_LLM_API_KEY } : {}) } }
      : {}),
  };
}

/**
 * The composition root: every module's service, built once. Routes and activities receive these and
 * never reach past them to a repository or to SQL of another module.
 */
/** The meters whose rollups ingestion and event changes keep: every meter of the organisation. */
const rollupMetersOf: RollupMetersOf = (trx, organisationId) => metersIn(trx).rollupMeters(organisationId);

/** Whether anything was ever charged for usage of the meter. */
/** What charges and plans hold against a meter's definition, read in the transaction that changes it. */
const meterUses: MeterUses = {
  billed: async (trx, organisationId, meterId) => chargesIn(trx).anyFor(await plansIn(trx).itemIdsOfMeter(organisationId, meterId)),
  dimensionalItems: (trx, organisationId, meterId) => plansIn(trx).dimensionalItemsOfMeter(organisationId, meterId),
};

/** A contract's spend, for spend alerts: the rating engine's period-to-date usage charges, before tax, in its currency. */
const periodSpend: PeriodSpend = async (db, organisationId, contractId, at) => {
  const usage = await periodToDateUsage(db, organisationId, contractId, at);
  return { currency: usage.currency, amount: usage.total };
};

export function createServices(deps: ServiceDeps) {
  const { db } = deps;
  const attributes = createAttributeService(db);
  const invoiceRuns = createInvoiceRunService(db, deps.invoiceRunPaging);
  const collection = createCollectionService(deps);
  return {
    // Reference data
    addresses: createAddressService(db),
    contactGroups: createContactGroupService(db),
    customers: createCustomerService(db, contractCustomerUse),
    entities: createEntityService(db),
    // Money
    fxRates: createFxRateService(db),
    payments: createPaymentService(db),
    collection,
    paymentGateway: createPaymentGatewayService({ ...deps, collection }),
    revenue: createRevenueService(db),
    // Invoices
    invoiceItems: createInvoiceItemService(db, (trx, draft) => invoiceRuns.repriceDraft(trx, draft)),
    invoiceFiles: createInvoiceFileService(deps),
    invoiceLifecycle: createInvoiceLifecycleService(deps),
    creditNoteLifecycle: createCreditNoteLifecycleService(deps),
    credits: createCreditService(deps),
    coupons: createCouponService(db),
    alerts: createAlertService(db, periodSpend),
    collections: createCollectionsService(deps),
    invoiceRuns,
    progressiveBilling: createProgressiveBillingService(db),
    charges: createChargeService(db, (organisationId, contractId) => contractCurrency(db, organisationId, contractId)),
    // Usage, plans and contracts
    // A meter is billed once anything was charged for a plan item that meters it.
    meters: createMeterService(db, meterUses),
    meterBackfill: createMeterBackfillService(db),
    usageIngestion: createUsageIngestionService(db, rollupMetersOf),
    usageEventStorage: createUsageEventStorageService(db),
    entitlements: createEntitlementService(db),
    entitlementPeriods: createEntitlementPeriodService(db),
    billingPlans: createBillingPlanService(db, contractPlanUse),
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
  const invoiceRunControl = createInvoiceRunControlService({ ...workflowDeps, invoiceRuns: services.invoiceRuns });
  const apiServices = {
    ...services,
    invoices: createInvoiceService(workflowDeps, resolveContractPlan, invoiceSettlements),
    creditNotes: createCreditNoteService(workflowDeps),
    creditGrants: createCreditGrantService({ ...workflowDeps, credits: services.credits }),
    chatbot: createChatbotService({ ...workflowDeps, engine: deps.chatbotModel ? 'model' : 'builtin', idleSeconds: deps.chatbotIdleSeconds }),
    revenueSync: createRevenueSyncService(workflowDeps),
    contracts: createContractService(workflowDeps),
    usage: createUsageService(workflowDeps, rollupMetersOf, deps.usageIngestionShards),
    // The API's meters start the backfill of a meter created or redefined, once it committed.
    meters: createMeterService(deps.db, meterUses, async (meter) => {
      await deps.temporal.bounded(() =>
        deps.temporal.workflows.start('meterBackfillWorkflow', {
          workflowId: meterBackfillWorkflowId(meter.id, meter.backfill_generation),
          args: [{ organisationId: meter.organisation_id, meterId: meter.id, generation: meter.backfill_generation }],
          workflowIdConflictPolicy: 'USE_EXISTING',
          ...searchAttributes({ organisationId: meter.organisation_id }),
        }),
      );
    }),
    exports: createExportService(workflowDeps),
    // The API's gateway hands a webhook's payment to the invoice's collection workflow.
    paymentGateway: createPaymentGatewayService({ ...deps, collection: services.collection, nudgeCollection: (organisationId, invoiceId) => nudgeCollection(deps.temporal, organisationId, invoiceId), scheduleReconciliation: (organisationId) => ensureReconciliationSchedule(deps.temporal, organisationId) }),
    invoiceRunControl,
    invoiceRunSchedules: createInvoiceRunScheduleService({ ...workflowDeps, runs: invoiceRunControl }),
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
          const reminded = (await invoicesIn(deps.db).reminderDays(objectId)).length > 0;
          return { data, facts: { kind, status: data.status, reminded } };
        }
        case 'invoice_run': {
          // As the run's own events carry it: without its invoice list.
          const { invoices: _invoices, ...data } = await apiServices.invoiceRunControl.view(organisationId, objectId);
          return { data, facts: { kind, status: data.status } };
        }
        case 'contract': {
          const data = await apiServices.contracts.requireContract(organisationId, objectId);
          const resumedOnce = await contractsIn(deps.db).wasResumed(organisationId, objectId);
          return { data, facts: { kind, status: data.status, resumedOnce } };
        }
        case 'payment': {
          const data = await services.payments.getById(organisationId, objectId);
          // Payments recorded by marking an invoice paid, and refunds, carry keys the server made; neither sends payment.created.
          const row = (await paymentsIn(deps.db).findById(organisationId, objectId))!;
          const recordedBy = row.credit_note_id ? 'refund' : row.idempotency_scope === 'system' ? 'invoice' : 'api';
          return { data, facts: { kind, recordedBy, invoiceId: row.invoice_id, creditNoteId: row.credit_note_id } };
        }
        case 'credit_note': {
          const data = await apiServices.creditNotes.get(organisationId, objectId);
          return { data, facts: { kind, status: data.status } };
        }
        case 'usage_batch': {
          // As the real event has it: the batch less its per-event lists (GET /events/batches/{id} has them).
          const { failedRecords: _failed, duplicateEvents: _duplicates, ...data } = await apiServices.usage.batch(organisationId, objectId);
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
      usageBatchesByStatus: (db) => usageIn(db).countBatchesByStatus(),
      invoicesByStatus: (db) => invoicesIn(db).countByStatus(),
    }),
    // Custom lifecycles run through the same invoice and contract services as their own endpoints.
    fsm: createFsmService({ db: deps.db, invoices: apiServices.invoices, contracts: apiServices.contracts }),
  };
}

export type ApiServices = ReturnType<typeof createApiServices>;
