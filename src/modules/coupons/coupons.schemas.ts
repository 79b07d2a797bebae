import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, isoDateTime, reference, text } from '../../http/schemas';

const code = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, _ or -')
  .describe('what customers and integrators type: letters, digits, _ and -, at most 64');

export const createCouponBody = z
  .object({
    code,
    name: text(200).optional(),
    percentOff: decimal({ precision: 7, scale: 4, sign: 'positive', max: 100 }).optional().describe('> 0, at most 100; or amountOff and currency'),
    amountOff: decimal({ precision: 24, scale: 4, sign: 'positive' }).optional().describe("> 0, no more decimals than the currency's minor unit"),
    currency: isoCurrency.optional().describe('with amountOff: the coupon applies only to invoices in this currency'),
    duration: z.enum(['once', 'repeating', 'forever']).describe('once: one billing period; repeating: durationPeriods of them; forever: every one'),
    durationPeriods: z.number().int().min(1).max(1200).optional().describe('with repeating: how many billing periods'),
    maxRedemptions: z.number().int().min(1).max(1_000_000_000).optional().describe('how many contracts it may be applied to'),
    expiresAt: isoDateTime.optional().describe('after this it can no longer be applied; contracts that have it keep it'),
  })
  .superRefine((body, ctx) => {
    if ((body.percentOff === undefined) === (body.amountOff === undefined)) ctx.addIssue({ code: 'custom', path: ['percentOff'], message: 'give either percentOff, or amountOff with currency' });
    // Missing where it is due, it is required; given where it is not, it is given with that alone.
    if (body.amountOff !== undefined && body.currency === undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is required with amountOff' });
    if (body.amountOff === undefined && body.currency !== undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is given with amountOff, and only then' });
    if (body.duration === 'repeating' && body.durationPeriods === undefined) ctx.addIssue({ code: 'custom', path: ['durationPeriods'], message: 'is required with duration repeating' });
    if (body.duration !== 'repeating' && body.durationPeriods !== undefined) ctx.addIssue({ code: 'custom', path: ['durationPeriods'], message: 'is given with duration repeating, and only then' });
  });

export type CreateCouponBody = z.output<typeof createCouponBody>;

export const updateCouponBody = atLeastOne({
  name: text(200).nullable().optional(),
  maxRedemptions: z.number().int().min(1).max(1_000_000_000).nullable().optional().describe('null: no limit; never below the redemptions made'),
  expiresAt: isoDateTime.nullable().optional(),
});

export type UpdateCouponBody = z.output<typeof updateCouponBody>;

export const couponSchema = z.object({
  id: z.string(),
  code: z.string(),
  name: z.string().nullable(),
  percentOff: z.string().nullable(),
  amountOff: z.string().nullable(),
  currency: z.string().nullable(),
  duration: z.enum(['once', 'repeating', 'forever']),
  durationPeriods: z.number().nullable(),
  maxRedemptions: z.number().nullable(),
  redemptions: z.number().describe('contracts it was applied to'),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type CouponView = z.infer<typeof couponSchema>;

export const couponListQuery = pageQuery;

export const applyCouponBody = z.object({ code: text(64).describe("the coupon's code") });

export const contractCouponParams = z.object({ id: reference(), contractCouponId: reference() });

export const contractCouponSchema = z.object({
  id: z.string(),
  contractId: z.string(),
  coupon: couponSchema,
  periodsUsed: z.number().describe('billing periods of the contract whose invoices it has discounted, those before it was removed and applied again included'),
  active: z.boolean().describe('whether it discounts the next period: removed, or its duration served, it does not'),
  createdAt: z.string(),
});

export type ContractCouponView = z.infer<typeof contractCouponSchema>;
