import { z } from 'zod';
import { reference } from '../../http/schemas';

export const countryCodeParam = z.object({
  code: reference(8).describe('ISO 3166-1 alpha-2, any case'),
});

export const countrySchema = z.object({
  code: z.string().describe('ISO 3166-1 alpha-2'),
  alpha3: z.string().describe('ISO 3166-1 alpha-3'),
  numeric: z.string().describe('ISO 3166-1 numeric, zero-padded'),
  name: z.string(),
});

export const subdivisionSchema = z.object({
  code: z.string().describe('ISO 3166-2'),
  name: z.string(),
  countryCode: z.string(),
  parentCode: z.string().nullable().describe('enclosing subdivision of a second-level subdivision; null when directly under the country'),
});
