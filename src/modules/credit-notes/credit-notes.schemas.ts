import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimal, freeText, reference, isoDate } from '../../http/schemas';

/** Amounts land in NUMERIC(24,4) columns; the currency's own minor unit is checked against the invoice. */
const amount = decimal({ precision: 24, scale: 4, sign: 'positive' });

const lineInput = z.union([
  z.object({ invoiceItemId: reference(), amount: amount.describe("net amount to credit on the item: > 0, no more decimals than the currency's minor unit") }).strict(),
  z.object({ invoiceItemId: reference(), quantity: decimal({ precision: 24, scale: 6, sign: 'positive', integerDigits: 12 }).describe("units to credit at the item's price, less their share of the item's discounts") }).strict(),
]);

export const createCreditNoteBody = z.union([
  z
    .object({
      reason: freeText(1000),
      items: z.array(lineInput).min(1).max(1000).describe('credit these invoice items, each with the taxes of its plan item; a discounted item only what it paid'),
      refund: z.boolean().optional().describe('paid invoices only: true pays the amount back (a negative payment), false adds it to the customer’s credit balance (the default)'),
    })
    .strict(),
  z
    .object({
      reason: freeText(1000),
      amount: amount.describe('credit this amount of the invoice, tax included: what is left of the net and of the tax in its proportion to what is left of the total, the net shared over the items in proportion to what is left on each'),
      refund: z.boolean().optional().describe('paid invoices only: true pays the amount back (a negative payment), false adds it to the customer’s credit balance (the default)'),
    })
    .strict(),
]);

export type CreateCreditNoteBody = z.output<typeof createCreditNoteBody>;

export const CREDIT_NOTE_STATUSES = ['draft', 'issued', 'voided'] as const;

export const creditNoteListQuery = pageQuery.extend({
  customerId: reference().optional(),
  invoiceId: reference().optional(),
  status: z.enum(CREDIT_NOTE_STATUSES).optional(),
});

export const creditNoteSchema = z.object({
  id: z.string(),
  number: z.string().nullable().describe('from the organisation’s credit note series, given when first issued'),
  invoiceId: z.string(),
  customerId: z.string(),
  status: z.enum(CREDIT_NOTE_STATUSES),
  reason: z.string(),
  date: isoDate.describe("YYYY-MM-DD: the day the note was issued (drafted, until then) in the customer's time zone, else the organisation's; its PDF shows the same day"),
  currency: z.string(),
  subtotal: z.string(),
  taxTotal: z.string(),
  total: z.string(),
  refund: z.boolean(),
  settlement: z
    .enum(['reduces_due', 'refund', 'balance'])
    .nullable()
    .describe('what issuing did with the total: lowered what is owed on the unpaid invoice, paid it back, or added it to the credit balance'),
  refundPaymentId: z.string().nullable().describe('the negative payment of a refund, while the note is issued'),
  items: z.array(z.object({ invoiceItemId: z.string(), title: z.string(), quantity: z.string().nullable(), amount: z.string() })),
  issuedAt: z.string().nullable(),
  voidedAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type CreditNote = z.infer<typeof creditNoteSchema>;
