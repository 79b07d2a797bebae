import type { Knex } from 'knex';
import { createInvoiceTemplateRepository } from './invoice-templates.repository';

export { createInvoiceTemplateService } from './invoice-templates.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type InvoiceTemplateAccess = Pick<ReturnType<typeof createInvoiceTemplateRepository>, 'findDefaultBranding'>;
export const invoiceTemplatesIn = (db: Knex): InvoiceTemplateAccess => createInvoiceTemplateRepository(db);
