import { z } from 'zod';

/** Path ids are opaque strings; an id that names nothing in the caller's organisation answers 404. */
export const idParam = z.object({ id: z.string().min(1).max(64) });

export const timestamps = {
  createdAt: z.string().describe('ISO 8601 date-time'),
  updatedAt: z.string().describe('ISO 8601 date-time'),
};

export const isoCountry = z
  .string()
  .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code');

export const isoCurrency = z
  .string()
  .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code');

export const deletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

export const isoDate = z.iso.date().describe('YYYY-MM-DD');

/** Money and quantities: a number or a numeric string in, a decimal string out (never a binary float). */
export const decimalString = z
  .union([z.number().finite(), z.string().regex(/^[+-]?(\d+(\.\d*)?|\.\d+)$/, 'must be numeric')])
  .transform((value) => String(value));

/** The answer of a delete: the id that is gone. */
export const deleted = (id: string) => ({ id, deleted: true as const });
