import { z } from 'zod';
import { ianaTimeZone, isoCurrency, timestamps, text } from '../../http/schemas';

export const createCustomerBody = z.object({
  name: text(200),
  email: z.email().max(320).optional(),
  currency: isoCurrency.optional(),
  externalId: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe("The customer's id in your own system; unique among the organisation's live customers"),
  paymentTermsDays: z.number().int().min(0).max(365).nullable().optional().describe("days from an invoice's date to its due date, 0 to 365; absent or null: the organisation's terms"),
  timezone: ianaTimeZone
    .nullable()
    .optional()
    .describe("IANA time zone of the customer's dates (its invoices' and credit notes' dates, due dates, reminders); absent or null: the organisation's"),
});

export type CreateCustomerBody = z.output<typeof createCustomerBody>;

export const customerSchema = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string().nullable(),
  currency: z.string().nullable(),
  externalId: z.string().nullable(),
  paymentTermsDays: z.number().int().nullable().describe("null: the organisation's terms apply"),
  timezone: z.string().nullable().describe("null: the organisation's time zone applies"),
  ...timestamps,
});
