import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { defineRoute, requires, type Route } from '../../http/route';
import { atLeastOne, freeText, ianaTimeZone, isoCurrency } from '../../http/schemas';

const settingsSchema = z.object({
  baseCurrency: z.string(),
  timezone: z.string().describe("IANA time zone: the organisation's today, and the day every date the service stamps is read in unless a customer has its own zone"),
  invoiceNumberFormat: z.string().describe('{number} or {number:N} (zero-padded), optionally {year}'),
  creditNoteNumberFormat: z.string().describe("the credit notes' own series, in the same form; {year} is the year the credit note is first issued"),
  paymentTermsDays: z.number().int(),
  autoRaiseGeneratedInvoices: z.boolean(),
  autoSendGeneratedInvoices: z.boolean(),
  invoiceUndoWindowDays: z.number().int().describe('days a paid or cancelled invoice stays open for an undo'),
  dunningScheduleDays: z.array(z.number().int()).describe("days after an unpaid invoice's due date on which a reminder is e-mailed"),
  updatedAt: z.string(),
});

/** The IANA zones this runtime knows, the document lists them. */
const timezone = ianaTimeZone.describe("IANA time zone that defines the organisation's today and every date the service stamps (invoice, credit note and run dates, due dates, reminders), unless a customer has its own");

// Text and placeholders: {number} or {number:N} (zero-padded to N) once at least, {year} or {year:N} as you like.
const PLACEHOLDER = '\\{(?:number|year)(?::\\d{1,2})?\\}';
const LITERAL = '[^{}\\u0000]';
const invoiceNumberFormat = freeText(64)
  .regex(new RegExp(`^(?:${LITERAL}|${PLACEHOLDER})*\\{number(?::\\d{1,2})?\\}(?:${LITERAL}|${PLACEHOLDER})*$`), 'must contain {number} or {number:N}, may contain {year}, and no other braces')
  .describe('{number} or {number:N} (zero-padded), optionally {year}; at most 64 characters');

/** A schedule is a set of days: it is kept ascending, each day once, whatever order it was given in. */
const dunningScheduleDays = z
  .array(z.number().int().min(1).max(365))
  .max(10)
  .describe('at most 10 days after the due date, each 1 to 365; stored ascending, each once; [] sends no reminders')
  .transform((days) => [...new Set(days)].sort((a, b) => a - b));

const updateBody = atLeastOne({
  baseCurrency: isoCurrency.optional(),
  timezone: timezone.optional(),
  invoiceNumberFormat: invoiceNumberFormat.optional(),
  creditNoteNumberFormat: invoiceNumberFormat.optional(),
  paymentTermsDays: z.number().int().min(0).max(365).optional(),
  autoRaiseGeneratedInvoices: z.boolean().optional(),
  autoSendGeneratedInvoices: z.boolean().optional(),
  invoiceUndoWindowDays: z.number().int().min(0).max(365).optional(),
  dunningScheduleDays: dunningScheduleDays.optional(),
});

export function organisationSettingsRoutes(deps: AppDeps): Route[] {
  const settings = deps.services.organisationSettings;

  return [
    defineRoute({
      method: 'get',
      path: '/organisation/settings',
      summary: "The organisation's settings: base currency, timezone, invoice and credit note numbering, payment terms, reminders, automation",
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
