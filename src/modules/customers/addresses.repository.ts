import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { createEntityRepository } from './entities.repository';
import type { Address, AddressBody } from './addresses.schemas';

export type { Address };

export interface AddressRow {
  id: string;
  organisation_id: string;
  entity_id: string;
  line1: string;
  line2: string | null;
  city: string;
  state: string | null;
  postal_code: string | null;
  country: string;
  created_at: Date;
  updated_at: Date;
}

export function toAddress(row: AddressRow): Address {
  return {
    id: row.id,
    entityId: row.entity_id,
    line1: row.line1,
    line2: row.line2,
    city: row.city,
    state: row.state,
    postalCode: row.postal_code,
    country: row.country,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Addresses live and die with their entity; a soft-deleted entity's addresses are never read. */
export function createAddressRepository(db: Knex) {
  return {
    async insert(organisationId: string, entityId: string, input: AddressBody): Promise<AddressRow> {
      const [row] = await db<AddressRow>('addresses')
        .insert({
          id: newId('adr'),
          organisation_id: organisationId,
          entity_id: entityId,
          line1: input.line1,
          line2: input.line2 ?? null,
          city: input.city,
          state: input.state ?? null,
          postal_code: input.postalCode ?? null,
          country: input.country,
        })
        .returning('*');
      return row!;
    },

    /** One query for a whole page of entities; each entity's addresses in the order they were added. */
    async listByEntity(organisationId: string, entityIds: string[]): Promise<Map<string, Address[]>> {
      const byEntity = new Map<string, Address[]>();
      if (entityIds.length === 0) return byEntity;
      const rows = await db<AddressRow>('addresses')
        .where({ organisation_id: organisationId })
        .whereIn('entity_id', entityIds)
        .orderBy([{ column: 'created_at' }, { column: 'id' }]);
      for (const row of rows) byEntity.set(row.entity_id, [...(byEntity.get(row.entity_id) ?? []), toAddress(row)]);
      return byEntity;
    },

    async delete(organisationId: string, entityId: string, id: string): Promise<boolean> {
      const deleted = await db('addresses')
        .where({ organisation_id: organisationId, entity_id: entityId, id })
        .whereIn('entity_id', createEntityRepository(db).liveIds())
        .delete();
      return deleted > 0;
    },
  };
}

export type AddressRepository = ReturnType<typeof createAddressRepository>;
