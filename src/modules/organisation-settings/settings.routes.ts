import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { isCurrency } from '../../domain/currencies';
import { isValidInvoiceNumberFormat } from '../../domain/invoice-number';
import { AppError } from '../../domain/errors';
import { defineRoute, requires, type Route } from '../../http/route';
import { getOrganisationSettings, type SettingsRow } from './settings.repository';

const settingsSchema = z.object({
  baseCurrency: z.string(),
  timezone: z.string(),
  invoiceNumberFormat: z.string().describe('{number} or {number:N} (zero-padded), optionally {year}'),
  paymentTermsDays: z.number().int(),
  autoRaiseGeneratedInvoices: z.boolean(),
  autoSendGeneratedInvoices: z.boolean(),
  updatedAt: z.string(),
});

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const updateBody = z
  .object({
    baseCurrency: z.string().refine(isCurrency, 'must be an ISO 4217 currency').optional(),
    timezone: z.string().refine(isTimeZone, 'must be an IANA time zone').optional(),
    invoiceNumberFormat: z.string().refine(isValidInvoiceNumberFormat, 'must contain {number} or {number:N}, may contain {year}, at most 64 characters').optional(),
    paymentTermsDays: z.number().int().min(0).max(365).optional(),
    autoRaiseGeneratedInvoices: z.boolean().optional(),
    autoSendGeneratedInvoices: z.boolean().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'nothing to update');

const toSettings = (row: SettingsRow) => ({
  baseCurrency: row.base_currency,
  timezone: row.timezone,
  invoiceNumberFormat: row.invoice_number_format,
  paymentTermsDays: row.payment_terms_days,
  autoRaiseGeneratedInvoices: row.auto_raise_generated_invoices,
  autoSendGeneratedInvoices: row.auto_send_generated_invoices,
  updatedAt: row.updated_at.toISOString(),
});

export function organisationSettingsRoutes(deps: AppDeps): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: '/organisation/settings',
      summary: "The organisation's settings: base currency, timezone, invoice numbering, payment terms, automation",
      tag: 'Organisation settings',
      access: requires('OrganisationSettingService:getSettings'),
      response: settingsSchema,
      handler: async ({ auth }) => toSettings(await getOrganisationSettings(deps.db, auth.organisationId)),
    }),
    defineRoute({
      method: 'put',
      path: '/organisation/settings',
      summary: 'Change some settings; the others stay as they are',
      tag: 'Organisation settings',
      access: requires('OrganisationSettingService:updateSettings'),
      body: updateBody,
      response: settingsSchema,
      handler: async ({ body, auth }) => {
        await getOrganisationSettings(deps.db, auth.organisationId);
        const [row] = await deps.db('organisation_settings')
          .where({ organisation_id: auth.organisationId })
          .update({
            ...(body.baseCurrency !== undefined ? { base_currency: body.baseCurrency } : {}),
            ...(body.timezone !== undefined ? { timezone: body.timezone } : {}),
            ...(body.invoiceNumberFormat !== undefined ? { invoice_number_format: body.invoiceNumberFormat } : {}),
            ...(body.paymentTermsDays !== undefined ? { payment_terms_days: body.paymentTermsDays } : {}),
            ...(body.autoRaiseGeneratedInvoices !== undefined ? { auto_raise_generated_invoices: body.autoRaiseGeneratedInvoices } : {}),
            ...(body.autoSendGeneratedInvoices !== undefined ? { auto_send_generated_invoices: body.autoSendGeneratedInvoices } : {}),
            updated_at: deps.db.fn.now(),
          })
          .returning<SettingsRow[]>('*');
        if (!row) throw AppError.notFound('Settings');
        return toSettings(row);
      },
    }),
  ];
}
