import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimalString, isoDate } from '../../http/schemas';


export const invoiceItemInput = z.object({
  planItemId: z.string().optional().describe('the plan item this line bills; contract taxes may name plan items'),
  title: z.string().trim().min(1).max(500),
  description: z.string().max(5000).optional(),
  quantity: decimalString.refine((value) => Number(value) >= 0, 'must not be negative'),
  price: decimalString,
  fromDate: isoDate.optional(),
  toDate: isoDate.optional(),
});

export const createInvoiceBody = z.object({
  contractPlanId: z.string().min(1),
  invoiceData: z.object({ date: isoDate, fromDate: isoDate.optional(), toDate: isoDate.optional() }),
  invoiceItems: z.array(invoiceItemInput).max(1000).default([]),
});

/** The contract's status update: `paid` needs the paid date (field `paidDate`). */
export const updateInvoiceStatusBody = z.discriminatedUnion('status', [
  z.object({ status: z.literal('cancelled'), comments: z.string().max(5000).optional() }),
  z.object({
    status: z.literal('paid'),
    comments: z.string().max(5000).optional(),
    paidDate: z.iso.datetime({ offset: true }).or(isoDate).describe('ISO 8601 date or date-time; required for paid'),
  }),
]);

export const markPaidBody = z.object({ paidDate: z.iso.datetime({ offset: true }).or(isoDate) });

export const invoiceListQuery = pageQuery.extend({
  status: z.enum(['draft', 'raised', 'sent', 'paid', 'cancelled']).optional(),
  customerId: z.string().optional(),
  contractPlanId: z.string().optional(),
});

export const invoiceItemSchema = z.object({
  id: z.string(),
  planItemId: z.string().nullable(),
  title: z.string(),
  description: z.string().nullable(),
  quantity: z.string(),
  price: z.string(),
  amount: z.string().nullable().describe('quantity × price in the invoice currency, fixed at raise'),
  fromDate: z.string().nullable(),
  toDate: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const invoiceSchema = z.object({
  id: z.string(),
  number: z.string().nullable(),
  date: z.string(),
  fromDate: z.string().nullable(),
  toDate: z.string().nullable(),
  status: z.enum(['draft', 'raised', 'sent', 'paid', 'cancelled']),
  data: z.record(z.string(), z.unknown()),
  currency: z.string(),
  subtotal: z.string().nullable(),
  taxTotal: z.string().nullable(),
  total: z.string().nullable(),
  baseCurrency: z.string().nullable(),
  fxRate: z.string().nullable(),
  baseTotal: z.string().nullable(),
  paidDate: z.string().nullable(),
  comments: z.string().nullable(),
  customerId: z.string().nullable(),
  contractId: z.string().nullable(),
  items: z.array(invoiceItemSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
  deletedAt: z.string().nullable(),
  OrganisationId: z.string(),
  ContractPlanId: z.string().nullable(),
});
