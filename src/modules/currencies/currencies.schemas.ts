import { z } from 'zod';
import { reference } from '../../http/schemas';

export const currencyCodeParam = z.object({
  code: reference(8).describe('ISO 4217 code, any case'),
});

export const currencySchema = z.object({
  code: z.string().describe('ISO 4217'),
  name: z.string(),
  numericCode: z.string().describe('ISO 4217 numeric code'),
  minorUnits: z.number().int().describe('digits after the decimal point that amounts in this currency carry'),
});
