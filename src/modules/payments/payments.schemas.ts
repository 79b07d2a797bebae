import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, isoDateTime, reference, text, timestamps } from '../../http/schemas';

/** payments.amount is NUMERIC(24,4): ISO 4217 minor units reach 4 decimals; the currency's own limit is checked against the currency. */
const amountInput = decimal({ precision: 24, scale: 4, sign: 'positive' }).describe(
  "> 0, with no more decimals than the currency's minor unit",
);

const paidAt = isoDateTime.describe('ISO 8601 date-time with a zone');

export const createPaymentBody = z.object({
  customerId: reference(),
  invoiceId: text(64).optional().describe('The paid invoice, if any'),
  amount: amountInput,
  currency: isoCurrency,
  paidAt,
  method: text(100).optional().describe('e.g. bank_transfer, card'),
  reference: text(200).optional().describe('Your or the bank’s reference'),
});

export type CreatePaymentBody = z.output<typeof createPaymentBody>;

export const updatePaymentBody = atLeastOne({
  amount: amountInput.optional(),
  paidAt: paidAt.optional(),
  method: text(100).nullable().optional().describe('null clears it'),
  reference: text(200).nullable().optional().describe('null clears it'),
});

export type UpdatePaymentBody = z.output<typeof updatePaymentBody>;

export const paymentListQuery = pageQuery.extend({
  customerId: reference().optional(),
  invoiceId: reference().optional(),
});

export const paymentSchema = z.object({
  id: z.string(),
  customerId: z.string(),
  invoiceId: z.string().nullable(),
  amount: z.string().describe("decimal string with the currency's minor-unit digits; negative for a refund"),
  currency: z.string(),
  paidAt: z.string().describe('ISO 8601 date-time, UTC'),
  method: z.string().nullable(),
  reference: z.string().nullable(),
  creditNoteId: z.string().nullable().describe('set on a refund: a negative payment made by issuing this credit note'),
  ...timestamps,
});
