import { z } from 'zod';
import { isoCountry, timestamps } from '../../http/schemas';

export const addressBody = z.object({
  line1: z.string().trim().min(1).max(200),
  line2: z.string().trim().min(1).max(200).optional(),
  city: z.string().trim().min(1).max(100),
  state: z.string().trim().min(1).max(100).optional(),
  postalCode: z.string().trim().min(1).max(20).optional(),
  country: isoCountry.describe('ISO 3166-1 alpha-2, upper case'),
});

export type AddressBody = z.output<typeof addressBody>;

export const entityAddressParams = z.object({
  id: z.string().min(1).max(64).describe('Entity id'),
  addressId: z.string().min(1).max(64),
});

export const addressSchema = z.object({
  id: z.string(),
  entityId: z.string(),
  line1: z.string(),
  line2: z.string().nullable(),
  city: z.string(),
  state: z.string().nullable(),
  postalCode: z.string().nullable(),
  country: z.string(),
  ...timestamps,
});
