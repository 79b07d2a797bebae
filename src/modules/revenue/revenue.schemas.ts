import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { reference } from '../../http/schemas';

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

export const syncRevenueBody = z.object({ invoiceItemId: reference() });

export const syncRevenueResult = z.object({ invoiceItemId: z.string(), records: z.number().int() });
