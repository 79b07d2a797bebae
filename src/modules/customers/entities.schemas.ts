import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { isoCurrency, timestamps, text, reference } from '../../http/schemas';
import { addressBody, addressSchema } from './addresses.schemas';

export const entityType = z.enum(['customer', 'seller']);

const entityFields = {
  name: text(200),
  identifier: z
    .string()
    // Kept trimmed: one of only spaces would be empty, and says so.
    .regex(/\S/, 'must not be empty or only spaces')
    .trim()
    .max(200)
    .optional()
    .describe("Your own reference for the entity; unique among the organisation's live entities"),
  taxId: text(100).optional(),
  currency: isoCurrency.optional(),
  address: addressBody.optional().describe('Created with the entity, in the same transaction'),
};

/** A customer entity belongs to a customer; its id is the CustomerEntityId of usage events. */
export const createEntityBody = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('customer'),
    customerId: z
      .string({ error: (issue) => (issue.input === undefined ? 'customerId is required for a customer entity' : undefined) })
      .min(1)
      .max(64),
    ...entityFields,
  }),
  z.object({ type: z.literal('seller'), ...entityFields }),
]);

export type CreateEntityBody = z.output<typeof createEntityBody>;

export const entityListQuery = pageQuery.extend({ type: entityType.optional() });

/** An entity's identifier: the query of GET /entities/by-identifier, the path of its deprecated spelling. */
/** Trimmed, as the identifier is when it is stored, so that the value sent when creating finds the entity. */
/** Looked up as it is stored, trimmed; one of only spaces is refused as it is on create. */
export const identifierQuery = z.object({ identifier: reference(200).regex(/\S/, 'must not be empty or only spaces').transform((identifier) => identifier.trim()) });

export const entitySchema = z.object({
  id: z.string(),
  type: entityType,
  name: z.string(),
  customerId: z.string().nullable(),
  identifier: z.string().nullable(),
  taxId: z.string().nullable(),
  currency: z.string().nullable(),
  addresses: z.array(addressSchema),
  ...timestamps,
});
