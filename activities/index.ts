import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Mailer } from '../src/mail/mailer';
import { createContractActivities } from './contracts.activities';
import { createExportActivities } from './export.activities';
import { createInvoiceActivities } from './invoices.activities';
import { createRevenueActivities } from './revenue.activities';
import { createUsageActivities } from './usage.activities';

export interface ActivityDeps {
  db: Knex;
  logger: Logger;
  mailer: Mailer;
  /** Local files: exports, uploaded documents. */
  dataDir: string;
}

/** Every activity the worker registers, built from its dependencies; workflows proxy these types. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createUsageActivities(deps),
    ...createInvoiceActivities(deps),
    ...createContractActivities(deps),
    ...createExportActivities(deps),
    ...createRevenueActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
