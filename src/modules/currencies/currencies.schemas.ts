import { z } from 'zod';
import { isCurrency } from '../../domain/currencies';
import { toDecimal } from '../../domain/money';

/** An uppercase ISO 4217 code that the currency list knows; anything else is a 400 on that field. */
export const knownCurrency = z
  .string()
  .refine((code) => /^[A-Z]{3}$/.test(code) && isCurrency(code), 'must be a known ISO 4217 currency code, in uppercase')
  .describe('ISO 4217 code, e.g. EUR');

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

export interface DecimalLimits {
  /** Most digits after the point; more is refused rather than silently rounded. */
  scale: number;
  /** Most digits before the point. */
  integerDigits: number;
  positive?: boolean;
}

/**
 * Money and rates arrive as JSON numbers or numeric strings and leave as canonical decimal strings
 * (`"0.9200"` → `"0.92"`), never through a binary float beyond the JSON parser's own.
 */
export function decimalInput(limits: DecimalLimits) {
  return z
    .union([z.number(), z.string()])
    .transform((value, ctx) => {
      const text = typeof value === 'number' ? String(value) : value.trim();
      if (!Number.isFinite(Number(text)) || !NUMERIC.test(text)) {
        ctx.addIssue({ code: 'custom', message: 'must be a decimal number or a numeric string' });
        return z.NEVER;
      }
      const decimal = toDecimal(text);
      if (limits.positive && !decimal.gt(0)) {
        ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
        return z.NEVER;
      }
      if (decimal.decimalPlaces() > limits.scale) {
        ctx.addIssue({ code: 'custom', message: `must have at most ${limits.scale} decimal places` });
        return z.NEVER;
      }
      if (decimal.abs().trunc().toFixed().replace(/^0$/, '').length > limits.integerDigits) {
        ctx.addIssue({ code: 'custom', message: `must have at most ${limits.integerDigits} digits before the decimal point` });
        return z.NEVER;
      }
      return decimal.toFixed();
    })
    .describe('A decimal number or numeric string');
}

export const currencyCodeParam = z.object({
  code: z.string().trim().min(1).max(8).describe('ISO 4217 code, any case'),
});

export const currencySchema = z.object({
  code: z.string().describe('ISO 4217'),
  name: z.string(),
  numericCode: z.string().describe('ISO 4217 numeric code'),
  minorUnits: z.number().int().describe('digits after the decimal point that amounts in this currency carry'),
});
