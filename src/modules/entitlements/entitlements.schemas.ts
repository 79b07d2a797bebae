import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { atLeastOne, byInstant, decimal, isoDateTime, jsonObject, ordered, reference, text } from '../../http/schemas';
import { filtersSchema } from '../meters';

/** Quantities of a feature: usage limits and grants, as usage values are stored (NUMERIC(30, 10)). */
const quantity = (sign: 'positive' | 'nonNegative') => decimal({ precision: 30, scale: 10, sign });

export const featureKey = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, _, . or -')
  .describe('what the product checks by: letters, digits, _, . and -, at most 64');

export const createFeatureBody = z.object({
  key: featureKey,
  name: text(200),
  meterId: reference().optional().describe("a metered feature counts this meter's usage (a meter that sums or counts)"),
  filters: filtersSchema.optional().describe("narrows the meter's usage: conditions on any metadata key (not only the meter's groupBy keys), all of which an event must meet"),
});

export type CreateFeatureBody = z.output<typeof createFeatureBody>;

export const updateFeatureBody = atLeastOne({
  name: text(200).optional(),
  meterId: reference().nullable().optional().describe('only while no entitlement gives the feature'),
  filters: filtersSchema.optional().describe('only while no entitlement gives the feature'),
});

export type UpdateFeatureBody = z.output<typeof updateFeatureBody>;

export const featureSchema = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  meterId: z.string().nullable(),
  filters: z.array(z.record(z.string(), z.unknown())),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export type FeatureView = z.infer<typeof featureSchema>;

export const featureListQuery = pageQuery;

/** Anchors whose periods, a year of them on either side, stay in the years every date of the product can hold. */
const ANCHOR_FROM = Date.parse('1970-01-01T00:00:00Z');
const ANCHOR_TO = Date.parse('3000-01-01T00:00:00Z');

export const usagePeriod = z.enum(['day', 'week', 'month', 'year']);

export const createEntitlementBody = z
  .object({
    featureKey,
    type: z.enum(['boolean', 'static', 'metered']),
    config: jsonObject.optional().describe('static: the configuration the product reads (at most 10 KB of JSON)'),
    limit: quantity('nonNegative').optional().describe('metered: what each usage period allows before grants (none: grants only)'),
    usagePeriod: usagePeriod.optional().describe('metered: how often the limit comes back, in the organisation\'s time zone'),
    anchor: isoDateTime
      .refine((value) => Date.parse(value) >= ANCHOR_FROM && Date.parse(value) < ANCHOR_TO, 'must fall in the years 1970 to 2999')
      .optional()
      .describe("metered: periods repeat from this instant's calendar day (default: now); in the years 1970 to 2999"),
    isSoftLimit: z.boolean().optional().describe('metered: access stays on beyond the balance, and usage beyond it is overage'),
  })
  .superRefine((body, ctx) => {
    const metered = body.type === 'metered';
    if (metered && body.usagePeriod === undefined) ctx.addIssue({ code: 'custom', path: ['usagePeriod'], message: 'is required for a metered entitlement' });
    for (const field of ['limit', 'usagePeriod', 'anchor', 'isSoftLimit'] as const) {
      if (!metered && body[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is only for a metered entitlement' });
    }
    if (body.config !== undefined && body.type !== 'static') ctx.addIssue({ code: 'custom', path: ['config'], message: 'is only for a static entitlement' });
    if (body.type === 'static' && body.config === undefined) ctx.addIssue({ code: 'custom', path: ['config'], message: 'is required for a static entitlement' });
    if (body.config !== undefined && JSON.stringify(body.config).length > 10_240) ctx.addIssue({ code: 'custom', path: ['config'], message: 'must be at most 10 KB of JSON' });
  });

export type CreateEntitlementBody = z.output<typeof createEntitlementBody>;

export const entitlementParams = z.object({ id: reference(), featureKey });

/** An entitlement's value: what the product checks before letting the customer use the feature. */
export const entitlementValueSchema = z.object({
  featureKey: z.string(),
  type: z.enum(['boolean', 'static', 'metered']),
  hasAccess: z.boolean(),
  config: z.record(z.string(), z.unknown()).nullable().describe('static: the configuration'),
  usage: z.string().nullable().describe("metered: the current period's usage"),
  limit: z.string().nullable().describe('metered: what each period allows before grants'),
  balance: z.string().nullable().describe("metered: what is left now, of the period's limit and of the grants live now"),
  overage: z.string().nullable().describe('metered: usage of the current period beyond the limit and every grant'),
  isSoftLimit: z.boolean().nullable(),
  usagePeriod: usagePeriod.nullable(),
  periodStart: z.string().nullable(),
  periodEnd: z.string().nullable(),
});

export type EntitlementValue = z.infer<typeof entitlementValueSchema>;

export const entitlementSchema = entitlementValueSchema.extend({
  id: z.string(),
  customerId: z.string(),
  featureId: z.string(),
  anchor: z.string().nullable(),
  createdAt: z.string(),
});

export type EntitlementView = z.infer<typeof entitlementSchema>;

export const entitlementListQuery = pageQuery.omit({ search: true });

export const createGrantBody = ordered(
  z.object({
    amount: quantity('positive'),
    effectiveAt: isoDateTime.optional().describe('default: now'),
    expiresAt: isoDateTime.optional().describe('none: the grant never expires'),
    priority: z.number().int().min(0).max(1000).optional().describe('grants are drawn lowest first (default 0), then by the sooner expiry'),
  }),
  'effectiveAt',
  'expiresAt',
  byInstant,
);

export type CreateGrantBody = z.output<typeof createGrantBody>;

export const grantSchema = z.object({
  id: z.string(),
  entitlementId: z.string(),
  amount: z.string(),
  remaining: z.string().describe('what is left of it now'),
  effectiveAt: z.string(),
  expiresAt: z.string().nullable(),
  priority: z.number(),
  createdAt: z.string(),
});

export type GrantView = z.infer<typeof grantSchema>;

export const grantListQuery = pageQuery.omit({ search: true });
