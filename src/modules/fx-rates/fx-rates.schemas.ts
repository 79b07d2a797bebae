import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { timestamps } from '../../http/schemas';
import { decimalInput, knownCurrency } from '../currencies/currencies.schemas';

/** NUMERIC(30,12): more decimals would be rounded by the database, so they are refused instead. */
const rateInput = decimalInput({ scale: 12, integerDigits: 18, positive: true }).describe(
  'Units of toCurrency for one unit of fromCurrency; > 0, at most 12 decimals',
);

const calendarDate = z.iso.date().describe('YYYY-MM-DD');

export const createFxRateBody = z
  .object({
    fromCurrency: knownCurrency,
    toCurrency: knownCurrency,
    rate: rateInput,
    effectiveDate: calendarDate.describe('YYYY-MM-DD: the rate applies from this day until the next rate of the pair'),
  })
  .refine((body) => body.fromCurrency !== body.toCurrency, { message: 'must differ from fromCurrency', path: ['toCurrency'] });

export type CreateFxRateBody = z.output<typeof createFxRateBody>;

export const updateFxRateBody = z
  .object({
    rate: rateInput.optional(),
    effectiveDate: calendarDate.optional(),
  })
  .refine((body) => body.rate !== undefined || body.effectiveDate !== undefined, 'give rate, effectiveDate or both');

export type UpdateFxRateBody = z.output<typeof updateFxRateBody>;

export const fxRateListQuery = pageQuery.extend({
  fromCurrency: knownCurrency.optional(),
  toCurrency: knownCurrency.optional(),
});

export const effectiveRateQuery = z.object({
  from: knownCurrency,
  to: knownCurrency,
  date: calendarDate.optional().describe('YYYY-MM-DD; today (UTC) when absent'),
});

export const convertQuery = effectiveRateQuery.extend({
  amount: decimalInput({ scale: 12, integerDigits: 18 }).describe('Amount in the from currency'),
});

export const fxRateSchema = z.object({
  id: z.string(),
  fromCurrency: z.string(),
  toCurrency: z.string(),
  rate: z.string().describe('decimal string'),
  effectiveDate: z.string().describe('YYYY-MM-DD'),
  ...timestamps,
});

export const effectiveRateSchema = z.object({
  from: z.string(),
  to: z.string(),
  date: z.string().describe('the day asked about'),
  rate: z.string().describe('units of `to` for one unit of `from`'),
  inverted: z.boolean().describe('true when only the opposite pair had a rate and this is its inverse'),
  fxRateId: z.string().nullable().describe('the stored rate used; null for the same currency'),
  effectiveDate: z.string().nullable().describe('the day the stored rate took effect'),
});

export const conversionSchema = z.object({
  amount: z.string(),
  from: z.string(),
  to: z.string(),
  date: z.string(),
  rate: z.string(),
  inverted: z.boolean(),
  effectiveDate: z.string().nullable(),
  converted: z.string().describe("rounded half-up to the to currency's minor unit"),
});
