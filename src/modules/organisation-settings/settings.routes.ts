import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { isCurrency } from '../../domain/currencies';
import { isValidInvoiceNumberFormat } from '../../domain/invoice-number';
import { defineRoute, requires, type Route } from '../../http/route';

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

export function organisationSettingsRoutes(deps: AppDeps): Route[] {
  const settings = deps.services.organisationSettings;

  return [
    defineRoute({
      method: 'get',
      path: '/organisation/settings',
      summary: "The organisation's settings: base currency, timezone, invoice numbering, payment terms, automation",
      tag: 'Organisation settings',
      access: requires('OrganisationSettingService:getSettings'),
      response: settingsSchema,
      handler: async ({ auth }) => settings.get(auth.organisationId),
    }),
    defineRoute({
      method: 'put',
      path: '/organisation/settings',
      summary: 'Change some settings; the others stay as they are',
      tag: 'Organisation settings',
      access: requires('OrganisationSettingService:updateSettings'),
      body: updateBody,
      response: settingsSchema,
      handler: async ({ body, auth }) => settings.update(auth.organisationId, body),
    }),
  ];
}
