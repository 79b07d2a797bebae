import path from 'node:path';
import type { Knex } from 'knex';
import type { Config } from './config';
import { createMailer, type Mailer } from './mail/mailer';
import type { AccessTokenIssuer } from './modules/auth/access-tokens';
import { createFilesystemStorage, type FileStorage } from './storage/file-storage';
import type { TemporalHandle } from './temporal/client';
import { createAddressService } from './modules/addresses/addresses.service';
import { createContactGroupService } from './modules/contact-groups/contact-groups.service';
import { createContractService } from './modules/contracts/contracts.service';
import { createEntityService } from './modules/entities/entities.service';
import { createFxRateService } from './modules/fx-rates/fx-rates.service';
import { createInvoiceService } from './modules/invoices/invoices.service';
import { resolveContractPlan } from './modules/contracts/contract-plans.repository';
import { createPaymentService } from './modules/payments/payments.service';
import { createUsageService } from './modules/usage/usage.service';

/** What every service is built from. */
export interface ServiceDeps {
  db: Knex;
  mailer: Mailer;
  /** Uploaded invoice documents. */
  storage: FileStorage;
  /** Local files: exports. */
  dataDir: string;
}

/** The dependencies of the services as the configuration sets them up. */
export function serviceDepsFrom(config: Config, db: Knex): ServiceDeps {
  return {
    db,
    mailer: createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, dataDir: config.DATA_DIR }),
    storage: createFilesystemStorage(path.resolve(config.DATA_DIR, 'invoice-files')),
    dataDir: config.DATA_DIR,
  };
}

/**
 * The composition root: every module's service, built once. Routes and activities receive these and
 * never reach past them to a repository or to SQL of another module.
 */
export function createServices(deps: ServiceDeps) {
  const { db } = deps;
  return {
    // Reference data
    addresses: createAddressService(db),
    contactGroups: createContactGroupService(db),
    entities: createEntityService(db),
    // Money
    fxRates: createFxRateService(db),
    payments: createPaymentService(db),
  };
}

export type Services = ReturnType<typeof createServices>;

/** The API's services: the data services plus those that drive workflows through the Temporal client. */
export function createApiServices(deps: ServiceDeps & { temporal: TemporalHandle; accessTokens: AccessTokenIssuer }) {
  const services = createServices(deps);
  const workflowDeps = { db: deps.db, temporal: deps.temporal };
  return {
    ...services,
    invoices: createInvoiceService(workflowDeps, resolveContractPlan),
    contracts: createContractService(workflowDeps),
    usage: createUsageService(workflowDeps),
  };
}

export type ApiServices = ReturnType<typeof createApiServices>;
