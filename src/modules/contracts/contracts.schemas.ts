import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimalString, isoCurrency, isoDate, timestamps } from '../../http/schemas';
import { CONTRACT_STATES } from '../../domain/contract-state';


export const createContractBody = z.object({
  customerId: z.string().min(1),
  name: z.string().trim().min(1).max(200).optional(),
  currency: isoCurrency,
  startDate: isoDate,
  endDate: isoDate.optional(),
  plans: z.array(z.object({ planId: z.string().min(1), startDate: isoDate.optional(), endDate: isoDate.optional() })).min(1).max(50),
});

export const updateContractBody = z
  .object({ name: z.string().trim().min(1).max(200).optional(), endDate: isoDate.nullable().optional() })
  .refine((body) => Object.keys(body).length > 0, 'nothing to update');

export const contractListQuery = pageQuery.extend({ customerId: z.string().optional(), status: z.enum(CONTRACT_STATES).optional() });

export const contractPlanSchema = z.object({ id: z.string().describe('the contractPlanId'), planId: z.string(), startDate: z.string(), endDate: z.string().nullable() });

export const contractSchema = z.object({
  id: z.string(),
  customerId: z.string(),
  name: z.string().nullable(),
  currency: z.string(),
  status: z.enum(CONTRACT_STATES),
  startDate: z.string(),
  endDate: z.string().nullable(),
  plans: z.array(contractPlanSchema),
  ...timestamps,
});

export const createMilestoneBody = z
  .object({
    planItemId: z.string().min(1),
    name: z.string().trim().min(1).max(200),
    amount: decimalString.refine((value) => Number(value) > 0, 'must be positive').optional(),
    percentage: decimalString.refine((value) => Number(value) > 0 && Number(value) <= 100, 'must be in (0, 100]').optional(),
    dueDate: isoDate.optional(),
  })
  .refine((body) => (body.amount === undefined) !== (body.percentage === undefined), { message: 'give exactly one of amount and percentage', path: ['amount'] });

export const milestoneSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  contractPlanId: z.string(),
  planItemId: z.string(),
  name: z.string(),
  amount: z.string().nullable(),
  percentage: z.string().nullable(),
  dueDate: z.string().nullable(),
  achievedAt: z.string().nullable(),
  invoiceId: z.string().nullable(),
  ...timestamps,
});

export const taxBody = z.object({
  name: z.string().trim().min(1).max(200),
  rate: decimalString.refine((value) => Number(value) >= 0 && Number(value) <= 100, 'must be a percentage from 0 to 100'),
  appliesTo: z.union([z.literal('all'), z.array(z.string().min(1)).min(1)]).default('all'),
});

export const taxSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  name: z.string(),
  rate: z.string(),
  appliesTo: z.union([z.literal('all'), z.array(z.string())]),
  ...timestamps,
});
