import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimalString, isoCurrency, timestamps } from '../../http/schemas';


export const tierInput = z.object({
  upTo: decimalString.nullable(),
  unitPrice: decimalString,
  flatFee: decimalString.optional(),
});

export const planItemInput = z.object({
  name: z.string().trim().min(1).max(200),
  skuId: z.string().optional(),
  pricingModel: z.enum(['flat', 'per_unit', 'graduated', 'volume', 'package']),
  unitPrice: decimalString.optional(),
  quantity: decimalString.optional(),
  tiers: z.array(tierInput).max(50).optional(),
  packageSize: decimalString.optional(),
  meterId: z.string().optional(),
});

export const createPlanBody = z.object({
  name: z.string().trim().min(1).max(200),
  currency: isoCurrency,
  billingPeriod: z.enum(['monthly', 'quarterly', 'yearly', 'one_time']),
  items: z.array(planItemInput).max(100).default([]),
});

export const updatePlanBody = z
  .object({ name: z.string().trim().min(1).max(200).optional(), billingPeriod: z.enum(['monthly', 'quarterly', 'yearly', 'one_time']).optional() })
  .refine((body) => Object.keys(body).length > 0, 'nothing to update');

export const planListQuery = pageQuery;

export const planItemSchema = z.object({
  id: z.string(),
  planId: z.string(),
  name: z.string(),
  skuId: z.string().nullable(),
  pricingModel: z.enum(['flat', 'per_unit', 'graduated', 'volume', 'package']),
  unitPrice: z.string().nullable(),
  quantity: z.string().nullable(),
  tiers: z.array(z.object({ upTo: z.string().nullable(), unitPrice: z.string(), flatFee: z.string().optional() })).nullable(),
  packageSize: z.string().nullable(),
  meterId: z.string().nullable(),
  ...timestamps,
});

export const planSchema = z.object({
  id: z.string(),
  name: z.string(),
  currency: z.string(),
  billingPeriod: z.enum(['monthly', 'quarterly', 'yearly', 'one_time']),
  items: z.array(planItemSchema),
  ...timestamps,
});
