import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { isoDate, ordered, queryInteger, reference } from '../../http/schemas';

export const revenueSchema = z.object({
  id: z.string(),
  invoiceId: z.string(),
  invoiceItemId: z.string(),
  period: z.string().describe('first day of the month, YYYY-MM-DD'),
  days: z.number().int(),
  amount: z.string(),
  currency: z.string(),
  status: z.enum(['recognised', 'collected', 'reversed']),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const revenueListQuery = pageQuery.extend({ invoiceId: reference().optional() });

export const revenueSummaryQuery = ordered(
  z.object({
    from: isoDate.describe('a calendar date YYYY-MM-DD: a day of the first month (revenue is recognised by month)'),
    to: isoDate.describe('a calendar date YYYY-MM-DD: a day of the last month; not before from'),
    top: queryInteger(1, 100).default(10).describe('how many customers to rank per currency (1 to 100, default 10)'),
  }),
  'from',
  'to',
);

export const revenueSummarySchema = z.object({
  from: z.string().describe("the first day of from's month"),
  to: z.string().describe("the last day of to's month"),
  currencies: z.array(
    z.object({
      currency: z.string(),
      amount: z.string().describe('revenue recognised or collected in the months, not reversed'),
      topCustomers: z.array(z.object({ customerId: z.string(), name: z.string(), amount: z.string() })).describe('the customers with the most revenue in the currency, most first'),
    }),
  ),
});

export type RevenueSummary = z.output<typeof revenueSummarySchema>;

export const syncRevenueBody = z.object({ invoiceItemId: reference() });

export const syncRevenueResult = z.object({ invoiceItemId: z.string(), records: z.number().int() });
