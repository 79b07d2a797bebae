import type { Knex } from 'knex';
import { createEmailTemplateRepository } from './email-templates.repository';

export { HTML_MAX, SUBJECT_MAX, TEXT_MAX } from './email-templates.schemas';
export { createEmailTemplateService, renderTemplateOfKind } from './email-templates.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type EmailTemplateAccess = Pick<ReturnType<typeof createEmailTemplateRepository>, 'find'>;
export const emailTemplatesIn = (db: Knex): EmailTemplateAccess => createEmailTemplateRepository(db);
