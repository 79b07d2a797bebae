import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { EmailTemplateKind } from './email-templates.schemas';

export interface EmailTemplateRow {
  id: string;
  organisation_id: string;
  name: string;
  kind: EmailTemplateKind;
  subject: string;
  html: string;
  text: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The constraints whose violation is the caller's conflict, not a fault. */
export const TEMPLATE_NAME_UNIQUE = 'email_templates_organisation_id_name_unique';
export const TEMPLATE_KIND_UNIQUE = 'email_templates_one_per_kind';

/** E-mail templates. `db` may be a transaction. */
export function createEmailTemplateRepository(db: Knex) {
  const templates = (organisationId: string) => db<EmailTemplateRow>('email_templates').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, template: { name: string; kind: EmailTemplateKind; subject: string; html: string; text?: string | null }): Promise<EmailTemplateRow> {
      const [row] = await db<EmailTemplateRow>('email_templates')
        .insert({ id: newId('etp'), organisation_id: organisationId, name: template.name, kind: template.kind, subject: template.subject, html: template.html, text: template.text ?? null })
        .returning('*');
      return row!;
    },

    async find(organisationId: string, id: string): Promise<EmailTemplateRow | undefined> {
      return templates(organisationId).where({ id }).first();
    },

    /** The organisation's template of a built-in kind, if it has made one. */
    async findOfKind(organisationId: string, kind: Exclude<EmailTemplateKind, 'custom'>): Promise<EmailTemplateRow | undefined> {
      return templates(organisationId).where({ kind }).first();
    },

    async list(organisationId: string, filter: { kind?: EmailTemplateKind }, paging: PageQuery): Promise<Page<EmailTemplateRow>> {
      const query = templates(organisationId).select('*');
      if (filter.kind) query.where({ kind: filter.kind });
      return paginate<EmailTemplateRow, EmailTemplateRow>(query, paging, { searchColumns: ['name', 'subject'], map: (row) => row });
    },

    async update(organisationId: string, id: string, changes: { name?: string; subject?: string; html?: string; text?: string | null }): Promise<EmailTemplateRow | undefined> {
      const [row] = await templates(organisationId)
        .where({ id })
        .update({ ...changes, updated_at: db.fn.now() as unknown as Date })
        .returning('*');
      return row;
    },

    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await templates(organisationId).where({ id }).delete()) > 0;
    },
  };
}

export type EmailTemplateRepository = ReturnType<typeof createEmailTemplateRepository>;
