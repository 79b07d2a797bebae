import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { decimal, isoCurrency, isoDate, timestamps } from '../../http/schemas';

/** fx_rates.rate is NUMERIC(30,12). */
const rateInput = decimal({ precision: 30, scale: 12, sign: 'positive' }).describe(
  'Units of toCurrency for one unit of fromCurrency; > 0, at most 18 digits before the point and 12 after it',
);

export const createFxRateBody = z
  .object({
    fromCurrency: isoCurrency,
    toCurrency: isoCurrency,
    rate: rateInput,
    effectiveDate: isoDate.describe('YYYY-MM-DD: the rate applies from this day until the next rate of the pair'),
  })
  .refine((body) => body.fromCurrency !== body.toCurrency, { message: 'must differ from fromCurrency', path: ['toCurrency'] });

export type CreateFxRateBody = z.output<typeof createFxRateBody>;

export const updateFxRateBody = z
  .object({
    rate: rateInput.optional(),
    effectiveDate: isoDate.optional(),
  })
  .refine((body) => body.rate !== undefined || body.effectiveDate !== undefined, 'give rate, effectiveDate or both')
  .meta({ anyOf: [{ required: ['rate'] }, { required: ['effectiveDate'] }] });

export type UpdateFxRateBody = z.output<typeof updateFxRateBody>;

export const fxRateListQuery = pageQuery.extend({
  fromCurrency: isoCurrency.optional(),
  toCurrency: isoCurrency.optional(),
});

export const effectiveRateQuery = z.object({
  from: isoCurrency,
  to: isoCurrency,
  date: isoDate.optional().describe("YYYY-MM-DD; today in the organisation's time zone when absent"),
});

export const convertQuery = effectiveRateQuery.extend({
  amount: decimal({ precision: 30, scale: 12 }).describe('Amount in the from currency: at most 18 digits before the point and 12 after it'),
});

export const fxRateSchema = z.object({
  id: z.string(),
  fromCurrency: z.string(),
  toCurrency: z.string(),
  rate: z.string().describe('decimal string'),
  effectiveDate: isoDate.describe('YYYY-MM-DD'),
  ...timestamps,
});

export const effectiveRateSchema = z.object({
  from: z.string(),
  to: z.string(),
  date: isoDate.describe('the day asked about'),
  rate: z.string().describe('units of `to` for one unit of `from`'),
  inverted: z.boolean().describe('true when only the opposite pair had a rate and this is its inverse'),
  fxRateId: z.string().nullable().describe('the stored rate used; null for the same currency'),
  effectiveDate: isoDate.nullable().describe('the day the stored rate took effect'),
});

export const conversionSchema = z.object({
  amount: z.string(),
  from: z.string(),
  to: z.string(),
  date: isoDate,
  rate: z.string(),
  inverted: z.boolean(),
  effectiveDate: isoDate.nullable(),
  converted: z.string().describe("rounded half-up to the to currency's minor unit"),
});
