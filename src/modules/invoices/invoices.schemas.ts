import { z } from 'zod';
import { acceptingFormerNames } from '../../http/former-names';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, freeText, isoDate, isoDateOrDateTime, ordered, reference, text } from '../../http/schemas';

/**
 * invoice_items.quantity and .price are NUMERIC(24,6) and their product lands in .amount, NUMERIC(24,4): at
 * most 12 integer digits of quantity and 8 of price keep every product below 10^20, so it always fits.
 */
const quantity = decimal({ precision: 24, scale: 6, sign: 'nonNegative', integerDigits: 12 });
const price = decimal({ precision: 24, scale: 6, integerDigits: 8 });

export const invoiceItemInput = ordered(
  z.object({
    planItemId: reference().optional().describe('the plan item this line bills; contract taxes may name plan items'),
    title: text(500),
    description: freeText(5000).optional(),
    quantity: quantity.describe('≥ 0, below 10^12, at most 6 decimals'),
    price: price.describe('below 10^8 in absolute value, at most 6 decimals'),
    fromDate: isoDate.optional(),
    toDate: isoDate.optional().describe('not before fromDate'),
  }),
  'fromDate',
  'toDate',
);

/** The customer's own references for an invoice, printed on it: set on a draft, on creation or by the run that makes it. */
export const invoiceReferenceFields = {
  customerReference: text(200).describe("the customer's own reference for the invoice, printed on it; 1 to 200 characters"),
  purchaseOrderNumber: text(100).describe("the number of the customer's purchase order the invoice bills, printed on it; 1 to 100 characters"),
};

export const createInvoiceBody = z.object({
  contractPlanId: reference(),
  invoiceData: ordered(
    z.object({
      date: isoDate,
      fromDate: isoDate.optional(),
      toDate: isoDate.optional().describe('not before fromDate'),
      customerReference: invoiceReferenceFields.customerReference.optional(),
      purchaseOrderNumber: invoiceReferenceFields.purchaseOrderNumber.optional(),
    }),
    'fromDate',
    'toDate',
  ),
  invoiceItems: z.array(invoiceItemInput).max(1000).default([]),
});

const paidDate = isoDateOrDateTime.describe('ISO 8601 date, or date-time with a zone');

/** The contract's status update: `paid` needs the paid date (field `paidDate`). */
export const updateInvoiceStatusBody = z.discriminatedUnion('status', [
  z.object({ status: z.literal('cancelled'), comments: freeText(5000).optional() }),
  z.object({ status: z.literal('paid'), comments: freeText(5000).optional(), paidDate: paidDate.describe('ISO 8601 date or date-time with a zone; required for paid') }),
]);

export const markPaidBody = z.object({ paidDate });

/** A draft's references: each given is set, null clears it. */
export const updateDraftBody = atLeastOne({
  customerReference: invoiceReferenceFields.customerReference.nullable().optional(),
  purchaseOrderNumber: invoiceReferenceFields.purchaseOrderNumber.nullable().optional(),
});

/** The list's filters renamed to the one naming style, with their former names. */
export const INVOICE_FILTER_RENAMES = { dateFrom: 'from', dateTo: 'to' } as const;

export const invoiceListQuery = ordered(
  acceptingFormerNames(
    pageQuery.extend({
    status: z.enum(['draft', 'raised', 'sent', 'paid', 'cancelled']).optional(),
    customerId: reference().optional(),
    contractId: reference().optional().describe("only the invoices of this contract, every contract plan's"),
    contractPlanId: reference().optional(),
    invoiceRunId: reference().optional().describe('only the invoices this invoice run made'),
    overdue: z
      .enum(['true', 'false'])
      .describe("true: only invoices raised or sent whose due date is before today (in the customer's time zone when customerId is given, else the organisation's); false: all others")
      .transform((value) => value === 'true')
      .optional(),
    from: isoDate.optional().describe("YYYY-MM-DD: only invoices dated on or after this day (the invoice's date)"),
    to: isoDate.optional().describe('YYYY-MM-DD: only invoices dated on or before this day; not before from'),
    }),
    INVOICE_FILTER_RENAMES,
  ),
  'from',
  'to',
);

export const invoiceItemSchema = z.object({
  id: z.string(),
  planItemId: z.string().nullable(),
  title: z.string(),
  description: z.string().nullable(),
  quantity: z.string(),
  price: z.string(),
  amount: z.string().nullable().describe('quantity × price in the invoice currency, fixed at raise'),
  fromDate: isoDate.nullable(),
  toDate: isoDate.nullable(),
  couponId: z.string().nullable().describe('set on a discount line: the coupon that gave it'),
  planChangeId: z.string().nullable().describe('set on a credit line for a plan change: the change it credits (the old plan’s unused in-advance fee)'),
  dimensions: z
    .record(z.string(), z.string().nullable())
    .nullable()
    .describe("set on a usage line of a plan item priced per dimension value: the values it charges for (the price entry's match, with the presentation values; {} for the item's own price; the values nothing prices, null where usage had none)"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const invoiceSchema = z.object({
  id: z.string(),
  number: z.string().nullable(),
  date: isoDate,
  fromDate: isoDate.nullable(),
  toDate: isoDate.nullable(),
  status: z.enum(['draft', 'raised', 'sent', 'paid', 'cancelled']),
  data: z.record(z.string(), z.unknown()),
  currency: z.string(),
  subtotal: z.string().nullable(),
  taxTotal: z.string().nullable(),
  total: z.string().nullable(),
  baseCurrency: z.string().nullable(),
  fxRate: z.string().nullable(),
  baseTotal: z.string().nullable(),
  creditsApplied: z.string().describe("the customer's credit balance consumed when the invoice was raised; returned if the raise is undone or the invoice cancelled"),
  creditedToBalance: z
    .string()
    .describe("raised with a total below zero: that amount, put on the customer's credit balance when it was raised (so it owes nothing); taken back if the raise is undone or the invoice cancelled; otherwise 0"),
  amountDue: z.string().nullable().describe('raised or sent: total plus creditedToBalance less creditsApplied less the credit notes that lowered it; paid: 0; draft or cancelled: null'),
  paidDate: isoDate.nullable(),
  dueDate: isoDate.nullable().describe('the invoice date plus the payment terms (the customer\'s, else the organisation\'s), set when raised'),
  comments: z.string().nullable(),
  customerId: z.string().nullable(),
  contractId: z.string().nullable(),
  invoiceRunId: z.string().nullable().describe('the invoice run that made the invoice, if one did'),
  customerReference: z.string().nullable().describe("the customer's own reference for the invoice, printed on it"),
  purchaseOrderNumber: z.string().nullable().describe("the customer's purchase order the invoice bills, printed on it"),
  items: z.array(invoiceItemSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
  deletedAt: z.string().nullable(),
  OrganisationId: z.string(),
  ContractPlanId: z.string().nullable(),
});
