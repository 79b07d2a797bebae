import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { timestamps } from '../../http/schemas';
import { decimalInput, knownCurrency } from '../currencies/currencies.schemas';

/** ISO 4217 minor units reach 4 decimals; the currency's own limit is checked against the currency. */
const amountInput = decimalInput({ scale: 4, integerDigits: 20, positive: true }).describe(
  "> 0, with no more decimals than the currency's minor unit",
);

const paidAt = z.iso.datetime({ offset: true }).describe('ISO 8601 date-time with a zone');
const text = (max: number) => z.string().trim().min(1).max(max);

export const createPaymentBody = z.object({
  customerId: z.string().min(1).max(64),
  invoiceId: text(64).optional().describe('The paid invoice, if any'),
  amount: amountInput,
  currency: knownCurrency,
  paidAt,
  method: text(100).optional().describe('e.g. bank_transfer, card'),
  reference: text(200).optional().describe('Your or the bank’s reference'),
});

export type CreatePaymentBody = z.output<typeof createPaymentBody>;

export const updatePaymentBody = z
  .object({
    amount: amountInput.optional(),
    paidAt: paidAt.optional(),
    method: text(100).nullable().optional().describe('null clears it'),
    reference: text(200).nullable().optional().describe('null clears it'),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), 'give at least one of amount, paidAt, method, reference');

export type UpdatePaymentBody = z.output<typeof updatePaymentBody>;

export const paymentListQuery = pageQuery.extend({
  customerId: z.string().min(1).max(64).optional(),
  invoiceId: z.string().min(1).max(64).optional(),
});

/** Printable ASCII, like Stripe's keys; a UUID is the usual choice. */
export const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

export const paymentSchema = z.object({
  id: z.string(),
  customerId: z.string(),
  invoiceId: z.string().nullable(),
  amount: z.string().describe("decimal string with the currency's minor-unit digits"),
  currency: z.string(),
  paidAt: z.string().describe('ISO 8601 date-time, UTC'),
  method: z.string().nullable(),
  reference: z.string().nullable(),
  ...timestamps,
});
