import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { defineRoute, requires, type Route } from '../../http/route';
import { compactBankCode, isValidBic, isValidIban } from '../../domain/bank-details';
import { atLeastOne, freeText, ianaTimeZone, isoCurrency, localeTag, paymentTermsDays, text } from '../../http/schemas';

const paymentDetailsSchema = z
  .object({
    accountHolder: z.string().optional().describe('the name the account is held in'),
    bankName: z.string().optional(),
    accountNumber: z.string().optional().describe('a national account number, with its sort or routing code if the country uses one'),
    iban: z.string().optional().describe('without spaces, upper case; printed in groups of four'),
    bic: z.string().optional(),
    paymentLink: z.string().optional().describe('a page where the invoice can be paid'),
    reference: z.string().optional().describe('what customers quote with a payment; {number} stands for the invoice number; without it, the invoice number'),
  })
  .nullable()
  .describe('how customers pay: printed in the "Payment details" block of every invoice, only the fields set; null when none');

/** Spaces allowed on the way in (up to one every four characters); kept without them. */
const bankCode = (max: number, valid: (value: string) => boolean, message: string) =>
  z
    .string()
    .max(max + Math.ceil(max / 4))
    .transform(compactBankCode)
    .refine(valid, message);

/** Replaces the whole block: fields left out are not set; at least one is given. */
const paymentDetailsInput = atLeastOne({
  accountHolder: text(200).optional(),
  bankName: text(200).optional(),
  accountNumber: text(64).optional().describe('a national account number (with its sort or routing code), 1 to 64 characters'),
  iban: bankCode(34, isValidIban, 'must be an IBAN: country, check digits and account, 15 to 34 characters, whose check digits hold (mod 97)')
    .optional()
    .describe('spaces allowed; kept without them, in upper case; checked by its length, form and mod-97 check digits'),
  bic: bankCode(11, isValidBic, 'must be a BIC: 8 or 11 letters and digits (bank, country, location, branch)').optional().describe('8 or 11 characters; kept in upper case'),
  paymentLink: z
    .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
    .max(2000)
    .regex(/^[\x21-\x7e]+$/, 'must be written in visible ASCII characters (percent-encode the others)')
    .optional()
    .describe('an http(s) URL in visible ASCII characters (others percent-encoded), at most 2,000 characters; printed as a link'),
  reference: text(140)
    .optional()
    .describe('at most 140 characters (a SEPA remittance line); {number} stands for the invoice number; without it, customers quote the invoice number'),
}, { inAlternative: true }).nullable();

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
  locale: z.string().describe('BCP 47: how invoices and credit notes write numbers and dates, unless the customer has its own locale'),
  paymentDetails: paymentDetailsSchema,
  usageRetentionMonths: z
    .number()
    .int()
    .nullable()
    .describe('whole UTC months of usage events kept before the current one; older months are deleted once billed and paid; null keeps every event'),
  updatedAt: z.string(),
});

/** The IANA zones this runtime knows, the document lists them. */
const timezone = ianaTimeZone.describe("IANA time zone that defines the organisation's today and every date the service stamps (invoice, credit note and run dates, due dates, reminders), unless a customer has its own; usage windows are days in it, so it cannot change once usage has been billed (409)");

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
  paymentTermsDays: paymentTermsDays.optional(),
  autoRaiseGeneratedInvoices: z.boolean().optional(),
  autoSendGeneratedInvoices: z.boolean().optional(),
  invoiceUndoWindowDays: z.number().int().min(0).max(365).optional(),
  dunningScheduleDays: dunningScheduleDays.optional(),
  locale: localeTag.optional(),
  paymentDetails: paymentDetailsInput.optional().describe('replaces the whole block (fields left out are not set); null removes it'),
  usageRetentionMonths: z
    .number()
    .int()
    .min(1)
    .max(1200)
    .nullable()
    .optional()
    .describe('1 to 1,200 whole UTC months of usage events kept before the current one; a month older than that is deleted once every invoice over it is paid or cancelled and its usage is billed; null keeps every event'),
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
