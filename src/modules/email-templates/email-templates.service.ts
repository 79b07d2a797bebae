import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { isOverBudget, type RenderedMail, type TemplateRenderer } from '../../mail/templating';
import { BUILT_IN_TEMPLATES } from './built-in-templates';
import { createEmailTemplateRepository, TEMPLATE_KIND_UNIQUE, TEMPLATE_NAME_UNIQUE, type EmailTemplateRow } from './email-templates.repository';
import type { EmailTemplate, EmailTemplateKind } from './email-templates.schemas';

export function toEmailTemplate(row: EmailTemplateRow): EmailTemplate {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    subject: row.subject,
    html: row.html,
    text: row.text,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A unique violation is the caller's conflict; anything else goes on as it is. */
function conflicts(error: unknown, kind?: EmailTemplateKind): never {
  if (isUniqueViolation(error, TEMPLATE_NAME_UNIQUE)) throw AppError.conflict('An e-mail template with this name exists');
  if (isUniqueViolation(error, TEMPLATE_KIND_UNIQUE)) throw AppError.conflict(`The organisation has a ${kind ?? 'template of this kind'} template already: change that one`);
  throw error;
}

/**
 * The organisation's template of a built-in kind rendered with the variables, or the built-in message
 * when it has none. Invoice delivery and reminders send what this answers. A template over its render
 * budget fails the same way at every attempt: the error says whose template it is and which limit it
 * passed, and stays of the non-retryable kind.
 */
export async function renderTemplateOfKind(
  db: Knex,
  templates: TemplateRenderer,
  organisationId: string,
  kind: 'invoice' | 'reminder',
  variables: Record<string, unknown>,
): Promise<RenderedMail> {
  const own = await createEmailTemplateRepository(db).findOfKind(organisationId, kind);
  try {
    return await templates.render(own ?? BUILT_IN_TEMPLATES[kind], variables);
  } catch (error) {
    if (!isOverBudget(error) || !own) throw error;
    const why = error.items.map((item) => item.message).join('; ');
    throw new AppError(error.kind, `The organisation's ${kind} e-mail template (${own.id}) is over budget: ${why}`, error.items);
  }
}

/** E-mail templates: Handlebars sources checked when they are saved, rendered when a message is sent. */
export function createEmailTemplateService(db: Knex, templates: TemplateRenderer) {
  const repository = createEmailTemplateRepository(db);

  return {
    async create(organisationId: string, body: { name: string; kind: EmailTemplateKind; subject: string; html: string; text?: string | null }): Promise<EmailTemplate> {
      await templates.check(body);
      try {
        return toEmailTemplate(await repository.create(organisationId, body));
      } catch (error) {
        return conflicts(error, body.kind);
      }
    },

    async get(organisationId: string, id: string): Promise<EmailTemplate> {
      return toEmailTemplate(orNotFound(await repository.find(organisationId, id), 'E-mail template'));
    },

    /** The row itself, for a message rendered from it. */
    async row(organisationId: string, id: string): Promise<EmailTemplateRow> {
      return orNotFound(await repository.find(organisationId, id), 'E-mail template');
    },

    async list(organisationId: string, filter: { kind?: EmailTemplateKind }, paging: PageQuery): Promise<Page<EmailTemplate>> {
      const page = await repository.list(organisationId, filter, paging);
      return { ...page, items: page.items.map(toEmailTemplate) };
    },

    async update(organisationId: string, id: string, body: { name?: string; subject?: string; html?: string; text?: string | null }): Promise<EmailTemplate> {
      await templates.check(body);
      try {
        return toEmailTemplate(orNotFound(await repository.update(organisationId, id, body), 'E-mail template'));
      } catch (error) {
        return conflicts(error);
      }
    },

    /** Messages already rendered from it keep their text; invoice mail falls back to the built-in message. */
    async delete(organisationId: string, id: string): Promise<{ id: string; deleted: true }> {
      if (!(await repository.delete(organisationId, id))) throw AppError.notFound('E-mail template');
      return { id, deleted: true };
    },
  };
}

export type EmailTemplateService = ReturnType<typeof createEmailTemplateService>;
