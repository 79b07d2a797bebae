import { z } from 'zod';
import { Decimal, INVOICE_AMOUNT_LIMIT } from '../../domain/money';
import { pageQuery } from '../../http/paging';
import { atLeastOne, decimal, isoCurrency, isoDate, reference, text, timestamps } from '../../http/schemas';
import { dimensionValueText, MAX_DIMENSIONS, metadataKey } from '../meters';
import { DIGEST_PREFIX, DIMENSION_VALUE_MAX_BYTES, keptAsText } from '../../domain/dimension-value';

/** billing_plan_items.unit_price is NUMERIC(24,10); quantity and package_size NUMERIC(24,6). Tiers follow the same columns. */
const unitPrice = decimal({ precision: 24, scale: 10, sign: 'nonNegative' });
const planQuantity = decimal({ precision: 24, scale: 6, sign: 'nonNegative' });

export const tierInput = z.object({
  upTo: planQuantity.nullable().describe('null for the last, unbounded tier; ascending otherwise'),
  unitPrice,
  flatFee: decimal({ precision: 24, scale: 4, sign: 'nonNegative' }).optional(),
});

export const billingTiming = z.enum(['in_advance', 'in_arrears']);

/** The price fields of each pricing model: a plan item's own, or a price entry's per dimension value. */
const priceFields = {
  unit: { pricingModel: z.enum(['flat', 'per_unit']), unitPrice, quantity: planQuantity.optional() },
  tiered: { pricingModel: z.enum(['graduated', 'volume']), tiers: z.array(tierInput).min(1).max(50) },
  package: { pricingModel: z.literal('package'), unitPrice, packageSize: decimal({ precision: 24, scale: 6, sign: 'positive' }) },
};

/** Most price entries an item has. */
export const MAX_DIMENSIONAL_PRICES = 100;

/**
 * A value a dimension must have: compared as text with the event's metadata value, as meter filters are.
 * Usage of a value past 400 bytes of UTF-8 is grouped by its digest (`sha256:` and 64 hex digits), which a
 * match names instead of such a value.
 */
const dimensionValue = dimensionValueText.refine(keptAsText, {
  message: `must be at most ${DIMENSION_VALUE_MAX_BYTES} bytes of UTF-8; usage of a longer value is grouped as ${DIGEST_PREFIX} and the hex SHA-256 of its text, which a match names instead`,
});

export const dimensionMatch = z
  .record(metadataKey, dimensionValue)
  .refine((match) => Object.keys(match).length >= 1 && Object.keys(match).length <= MAX_DIMENSIONS, `must name 1 to ${MAX_DIMENSIONS} dimensions of the item's meter`)
  .meta({ minProperties: 1, maxProperties: MAX_DIMENSIONS, description: "the dimension values (keys of the meter's groupBy) usage must have for this price" });

const matchField = { match: dimensionMatch };

export const dimensionalPriceInput = z
  .discriminatedUnion('pricingModel', [z.object({ ...matchField, ...priceFields.unit }), z.object({ ...matchField, ...priceFields.tiered }), z.object({ ...matchField, ...priceFields.package })])
  .transform((entry) => ({ unitPrice: undefined, quantity: undefined, tiers: undefined, packageSize: undefined, ...entry }));

/** Prices per dimension value of an item; `params` says what their absence or wrong type means where that differs. */
const dimensionalPricesOf = (params?: { error: (issue: { input: unknown }) => string | undefined }) =>
  z
    .array(dimensionalPriceInput, params)
    .min(1)
    .max(MAX_DIMENSIONAL_PRICES)
    .describe(
      "prices per dimension value of a metered item: usage is priced by the entry whose match it meets on the most keys (entries that could tie are refused), else by the item's own price, else shown on a 0.00 line per combination of values; the meter must aggregate by sum, count or max",
    );

const dimensionalPrices = dimensionalPricesOf();

/** What an item with neither a price of its own nor prices per dimension value is told. */
const UNPRICED_ITEM = 'is required when the item has no pricingModel: give the item a pricingModel (flat, per_unit, graduated, volume or package) and its price, or prices per dimension value here';

const presentationGroupBy = z
  .array(metadataKey)
  .min(1)
  .max(MAX_DIMENSIONS)
  .refine((keys) => new Set(keys).size === keys.length, 'must not repeat a key')
  .meta({ uniqueItems: true, description: "dimensions of the meter (sum or count) each price entry's first line is split by: a line per value, quantities and amounts adding up to the entry's" });

const itemFields = {
  name: text(200),
  skuId: reference().optional(),
  meterId: reference().optional(),
  billingTiming: billingTiming.optional().describe('when a run bills the item: in_advance (default without a meter) or in_arrears (default with a meter)'),
  dimensionalPrices: dimensionalPrices.optional(),
  presentationGroupBy: presentationGroupBy.optional(),
};

/**
 * What each pricing model needs is required by the model; tiers must ascend, which the service checks.
 * An item with `dimensionalPrices` may have no price of its own (no pricingModel).
 */
export const planItemInput = z
  .discriminatedUnion('pricingModel', [
    z.object({ ...itemFields, ...priceFields.unit }),
    z.object({ ...itemFields, ...priceFields.tiered }),
    z.object({ ...itemFields, ...priceFields.package }),
    z.object({
      ...itemFields,
      pricingModel: z.null().optional().describe("absent: the item is priced per dimension value alone, usage no entry matches on 0.00 lines"),
      dimensionalPrices: dimensionalPricesOf({ error: (issue) => (issue.input === undefined ? UNPRICED_ITEM : undefined) }),
    }),
  ])
  // Usage is known once its period has ended.
  .refine((item) => !(item.meterId && item.billingTiming === 'in_advance'), { message: 'an item with a meter is billed in arrears', path: ['billingTiming'] })
  .refine((item) => item.meterId || (!item.dimensionalPrices && !item.presentationGroupBy), { message: 'prices per dimension value are for an item with a meter', path: ['meterId'] })
  // A period's line is the price times the quantity: one an invoice cannot hold could never be raised.
  .refine((item) => item.meterId || !('quantity' in item) || item.quantity === undefined || new Decimal(item.unitPrice).times(item.quantity).lt(INVOICE_AMOUNT_LIMIT), {
    message: 'times unitPrice must be below 10^20: an invoice line holds at most 20 digits before the point',
    path: ['quantity'],
  })
  // One shape for the service and the repository, whatever the model.
  .transform(({ pricingModel, ...item }) => ({ unitPrice: undefined, quantity: undefined, tiers: undefined, packageSize: undefined, ...item, pricingModel: pricingModel ?? null }));

const billingPeriod = z.enum(['monthly', 'quarterly', 'yearly', 'one_time']);

export const createPlanBody = z.object({
  name: text(200),
  currency: isoCurrency,
  billingPeriod,
  items: z.array(planItemInput).max(100).default([]),
});

const effectiveDate = isoDate.describe("the first day the change is in force, in the organisation's time zone (default: today there); 409 when a contract was already charged for that day or later");

export const updatePlanBody = atLeastOne({ name: text(200).optional(), billingPeriod: billingPeriod.optional(), effectiveDate: effectiveDate.optional() });

export const addPlanItemQuery = z.object({
  effectiveDate: isoDate
    .describe(
      "the item's first day in force, in the organisation's time zone (default on a plan in use: today there). A day inside a period already charged is taken: the next invoice charges the new item from that day",
    )
    .optional(),
});

export const deletePlanItemQuery = z.object({ effectiveDate: effectiveDate.optional() });

export const planListQuery = pageQuery;

export const planItemSchema = z.object({
  id: z.string(),
  planId: z.string(),
  name: z.string(),
  skuId: z.string().nullable(),
  pricingModel: z.enum(['flat', 'per_unit', 'graduated', 'volume', 'package']).nullable().describe('null: the item is priced per dimension value alone'),
  unitPrice: z.string().nullable(),
  quantity: z.string().nullable(),
  tiers: z.array(z.object({ upTo: z.string().nullable(), unitPrice: z.string(), flatFee: z.string().optional() })).nullable(),
  packageSize: z.string().nullable(),
  meterId: z.string().nullable(),
  dimensionalPrices: z
    .array(
      z.object({
        match: z.record(z.string(), z.string()),
        pricingModel: z.enum(['flat', 'per_unit', 'graduated', 'volume', 'package']),
        unitPrice: z.string().nullable(),
        quantity: z.string().nullable(),
        tiers: z.array(z.object({ upTo: z.string().nullable(), unitPrice: z.string(), flatFee: z.string().optional() })).nullable(),
        packageSize: z.string().nullable(),
      }),
    )
    .nullable()
    .describe("prices per dimension value; the item's own price, if any, prices the usage no entry matches"),
  presentationGroupBy: z.array(z.string()).nullable().describe("dimensions each price entry's line is split by"),
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
