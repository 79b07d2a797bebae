import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, isoDate, reference, text, timestamps } from '../../http/schemas';

/** billing_plan_items.unit_price is NUMERIC(24,10); quantity and package_size NUMERIC(24,6). Tiers follow the same columns. */
const unitPrice = decimal({ precision: 24, scale: 10, sign: 'nonNegative' });
const planQuantity = decimal({ precision: 24, scale: 6, sign: 'nonNegative' });

export const tierInput = z.object({
  upTo: planQuantity.nullable().describe('null for the last, unbounded tier; ascending otherwise'),
  unitPrice,
  flatFee: decimal({ precision: 24, scale: 4, sign: 'nonNegative' }).optional(),
});

export const billingTiming = z.enum(['in_advance', 'in_arrears']);

const itemFields = {
  name: text(200),
  skuId: reference().optional(),
  meterId: reference().optional(),
  billingTiming: billingTiming.optional().describe('when a run bills the item: in_advance (default without a meter) or in_arrears (default with a meter)'),
};

/** What each pricing model needs is required by the model; tiers must ascend, which the service checks. */
export const planItemInput = z
  .discriminatedUnion('pricingModel', [
    z.object({ ...itemFields, pricingModel: z.enum(['flat', 'per_unit']), unitPrice, quantity: planQuantity.optional() }),
    z.object({ ...itemFields, pricingModel: z.enum(['graduated', 'volume']), tiers: z.array(tierInput).min(1).max(50) }),
    z.object({ ...itemFields, pricingModel: z.literal('package'), unitPrice, packageSize: decimal({ precision: 24, scale: 6, sign: 'positive' }) }),
  ])
  // Usage is known once its period has ended.
  .refine((item) => !(item.meterId && item.billingTiming === 'in_advance'), { message: 'an item with a meter is billed in arrears', path: ['billingTiming'] })
  // One shape for the service and the repository, whatever the model.
  .transform((item) => ({ unitPrice: undefined, quantity: undefined, tiers: undefined, packageSize: undefined, ...item }));

const billingPeriod = z.enum(['monthly', 'quarterly', 'yearly', 'one_time']);

export const createPlanBody = z.object({
  name: text(200),
  currency: isoCurrency,
  billingPeriod,
  items: z.array(planItemInput).max(100).default([]),
});

const effectiveDate = isoDate.describe("the first day the change is in force, in the organisation's time zone (default: today there); 409 when a contract was already charged for that day or later");

export const updatePlanBody = atLeastOne({ name: text(200).optional(), billingPeriod: billingPeriod.optional(), effectiveDate: effectiveDate.optional() });

export const addPlanItemQuery = z.object({ effectiveDate: effectiveDate.optional() });

export const deletePlanItemQuery = z.object({ effectiveDate: effectiveDate.optional() });

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
  billingTiming,
  effectiveFrom: z.string().nullable().describe('the first day the item is in force; null: from the start of every contract plan'),
  effectiveTo: z.string().nullable().describe('the last day the item is in force; null: open-ended'),
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
