import { z } from 'zod';
import { atLeastOne, emailAddress, ianaTimeZone, isoCurrency, localeTag, paymentTermsDays, timestamps, text } from '../../http/schemas';

export const createCustomerBody = z.object({
  name: text(200),
  email: emailAddress.optional(),
  currency: isoCurrency.optional(),
  externalId: text(200)
    .optional()
    .describe("The customer's id in your own system; unique among the organisation's live customers"),
  paymentTermsDays: paymentTermsDays.nullable().optional().describe("days from an invoice's date to its due date, 0 to 365; absent or null: the organisation's terms"),
  locale: localeTag.nullable().optional().describe("a BCP 47 locale tag (en-GB, de-DE): how this customer's invoices and credit notes write numbers and dates; absent or null: the organisation's locale"),
  timezone: ianaTimeZone
    .nullable()
    .optional()
    .describe("IANA time zone of the customer's dates (its invoices' and credit notes' dates, due dates, reminders); absent or null: the organisation's"),
});

export type CreateCustomerBody = z.output<typeof createCustomerBody>;

/**
 * What an Admin may change of a customer: each field given is set, null clears it. Its currency is not
 * here: its contracts and invoices are in it. Dates and documents already stamped keep what they were
 * stamped with.
 */
export const updateCustomerBody = atLeastOne({
  name: text(200).optional(),
  email: emailAddress.nullable().optional(),
  externalId: text(200).nullable().optional().describe("The customer's id in your own system; unique among the organisation's live customers"),
  paymentTermsDays: paymentTermsDays.nullable().optional(),
  locale: localeTag.nullable().optional(),
  timezone: ianaTimeZone.nullable().optional(),
});

export type UpdateCustomerBody = z.output<typeof updateCustomerBody>;

export const customerSchema = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string().nullable(),
  currency: z.string().nullable(),
  externalId: z.string().nullable(),
  paymentTermsDays: z.number().int().nullable().describe("null: the organisation's terms apply"),
  locale: z.string().nullable().describe("BCP 47; null: the organisation's locale applies"),
  timezone: z.string().nullable().describe("null: the organisation's time zone applies"),
  ...timestamps,
});
