import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { isoCurrency, timestamps } from '../../http/schemas';

const decimalInput = z.union([z.number().finite(), z.string().regex(/^[+-]?(\d+(\.\d*)?|\.\d+)$/, 'must be numeric')]).transform(String);

export const tierInput = z.object({
  upTo: decimalInput.nullable(),
  unitPrice: decimalInput,
  flatFee: decimalInput.optional(),
});

export const planItemInput = z.object({
  name: z.string().trim().min(1).max(200),
  skuId: z.string().optional(),
  pricingModel: z.enum(['flat', 'per_unit', 'graduated', 'volume', 'package']),
  unitPrice: decimalInput.optional(),
  quantity: decimalInput.optional(),
  tiers: z.array(tierInput).max(50).optional(),
  packageSize: decimalInput.optional(),
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
