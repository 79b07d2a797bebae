import { z } from 'zod';
import { timestamps, text, reference } from '../../http/schemas';
import { COUNTRY_CODES } from '../geography';

export const addressBody = z.object({
  line1: text(200),
  line2: text(200).optional(),
  city: text(100),
  state: text(100).optional(),
  postalCode: text(20).optional(),
  country: z.enum(COUNTRY_CODES, { error: 'must be an ISO 3166-1 alpha-2 code of a country (GET /geography/countries lists them), in upper case' }).describe('ISO 3166-1 alpha-2, upper case'),
});

export type AddressBody = z.output<typeof addressBody>;

export const entityAddressParams = z.object({
  id: reference().describe('Entity id'),
  addressId: reference(),
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

/** An address as the API shows it. */
export interface Address {
  id: string;
  entityId: string;
  line1: string;
  line2: string | null;
  city: string;
  state: string | null;
  postalCode: string | null;
  country: string;
  createdAt: string;
  updatedAt: string;
}
