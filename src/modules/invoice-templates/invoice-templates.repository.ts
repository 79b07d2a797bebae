import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

/** A template without its logo's bytes: what lists and answers need. */
export interface InvoiceTemplateRow {
  id: string;
  organisation_id: string;
  name: string;
  accent_color: string;
  footer_text: string | null;
  legal_text: string | null;
  is_default: boolean;
  logo_content_type: 'image/png' | null;
  logo_size: number | null;
  logo_sha256: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A stored logo. */
export interface InvoiceTemplateLogo {
  content: Buffer;
  contentType: 'image/png';
  size: number;
  sha256: string;
}

/** What the invoice PDF takes from the organisation's default template. */
export interface InvoiceBranding {
  accentColor: string;
  footerText: string | null;
  legalText: string | null;
  logo: Buffer | null;
}

/** The constraints whose violation is the caller's conflict, not a fault. */
export const TEMPLATE_NAME_UNIQUE = 'invoice_templates_organisation_id_name_unique';
export const TEMPLATE_ONE_DEFAULT = 'invoice_templates_one_default';

/** Every column but the logo's bytes. */
const COLUMNS = ['id', 'organisation_id', 'name', 'accent_color', 'footer_text', 'legal_text', 'is_default', 'logo_content_type', 'logo_size', 'logo_sha256', 'created_at', 'updated_at'];

export interface TemplateChanges {
  name?: string;
  accentColor?: string;
  footerText?: string | null;
  legalText?: string | null;
  isDefault?: boolean;
}

/** Invoice templates, their logos included. `db` may be a transaction. */
export function createInvoiceTemplateRepository(db: Knex) {
  const templates = (organisationId: string) => db<InvoiceTemplateRow>('invoice_templates').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, template: { name: string; accentColor: string; footerText?: string | null; legalText?: string | null; isDefault: boolean }): Promise<InvoiceTemplateRow> {
      const [row] = await db('invoice_templates')
        .insert({
          id: newId('itp'),
          organisation_id: organisationId,
          name: template.name,
          accent_color: template.accentColor,
          footer_text: template.footerText ?? null,
          legal_text: template.legalText ?? null,
          is_default: template.isDefault,
        })
        .returning<InvoiceTemplateRow[]>(COLUMNS);
      return row!;
    },

    async find(organisationId: string, id: string): Promise<InvoiceTemplateRow | undefined> {
      return templates(organisationId).where({ id }).first<InvoiceTemplateRow | undefined>(COLUMNS);
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<InvoiceTemplateRow>> {
      return paginate<InvoiceTemplateRow, InvoiceTemplateRow>(templates(organisationId).select(COLUMNS), paging, { searchColumns: ['name'], map: (row) => row });
    },

    async update(organisationId: string, id: string, changes: TemplateChanges): Promise<InvoiceTemplateRow | undefined> {
      const [row] = await templates(organisationId)
        .where({ id })
        .update({
          ...(changes.name !== undefined ? { name: changes.name } : {}),
          ...(changes.accentColor !== undefined ? { accent_color: changes.accentColor } : {}),
          ...(changes.footerText !== undefined ? { footer_text: changes.footerText } : {}),
          ...(changes.legalText !== undefined ? { legal_text: changes.legalText } : {}),
          ...(changes.isDefault !== undefined ? { is_default: changes.isDefault } : {}),
          updated_at: db.fn.now() as unknown as Date,
        })
        .returning<InvoiceTemplateRow[]>(COLUMNS);
      return row;
    },

    /**
     * Serialises changes of the organisation's default until the transaction ends (`db` must be one): a
     * second writer waits, then finds the first one's default and unsets it, instead of colliding with it.
     */
    async lockDefault(organisationId: string): Promise<void> {
      await db.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`invoice_templates.default:${organisationId}`]);
    },

    /** The organisation's default stops being one (but `exceptId`), so that another can become it. */
    async clearDefault(organisationId: string, exceptId?: string): Promise<void> {
      const query = templates(organisationId).where({ is_default: true });
      if (exceptId) query.whereNot({ id: exceptId });
      await query.update({ is_default: false, updated_at: db.fn.now() as unknown as Date });
    },

    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await templates(organisationId).where({ id }).delete()) > 0;
    },

    async setLogo(organisationId: string, id: string, logo: InvoiceTemplateLogo): Promise<InvoiceTemplateRow | undefined> {
      const [row] = await templates(organisationId)
        .where({ id })
        .update({ logo: logo.content, logo_content_type: logo.contentType, logo_size: logo.size, logo_sha256: logo.sha256, updated_at: db.fn.now() } as Record<string, unknown>)
        .returning<InvoiceTemplateRow[]>(COLUMNS);
      return row;
    },

    async clearLogo(organisationId: string, id: string): Promise<InvoiceTemplateRow | undefined> {
      const [row] = await templates(organisationId)
        .where({ id })
        .update({ logo: null, logo_content_type: null, logo_size: null, logo_sha256: null, updated_at: db.fn.now() } as Record<string, unknown>)
        .returning<InvoiceTemplateRow[]>(COLUMNS);
      return row;
    },

    /** The template's logo with its bytes; undefined when the template has none (or is not there). */
    async findLogo(organisationId: string, id: string): Promise<InvoiceTemplateLogo | undefined> {
      const row = await templates(organisationId)
        .where({ id })
        .whereNotNull('logo')
        .first<{ logo: Buffer; logo_content_type: 'image/png'; logo_size: number; logo_sha256: string } | undefined>('logo', 'logo_content_type', 'logo_size', 'logo_sha256');
      return row ? { content: row.logo, contentType: row.logo_content_type, size: row.logo_size, sha256: row.logo_sha256 } : undefined;
    },

    /** What the invoice PDF takes from the organisation's default template; null when it has none. */
    async findDefaultBranding(organisationId: string): Promise<InvoiceBranding | null> {
      const row = await templates(organisationId)
        .where({ is_default: true })
        .first<{ accent_color: string; footer_text: string | null; legal_text: string | null; logo: Buffer | null } | undefined>('accent_color', 'footer_text', 'legal_text', 'logo');
      return row ? { accentColor: row.accent_color, footerText: row.footer_text, legalText: row.legal_text, logo: row.logo } : null;
    },
  };
}

export type InvoiceTemplateRepository = ReturnType<typeof createInvoiceTemplateRepository>;
