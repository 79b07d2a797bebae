import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { createAddressRepository, toAddress } from './addresses.repository';
import { createCustomerRepository } from './customers.repository';
import { ENTITY_IDENTIFIER_UNIQUE, createEntityRepository, toEntity, type Entity, type EntityRow, type EntityType } from './entities.repository';
import type { CreateEntityBody } from './entities.schemas';

const duplicateIdentifier = (error: unknown): never => {
  if (isUniqueViolation(error, ENTITY_IDENTIFIER_UNIQUE)) throw AppError.conflict('An entity with this identifier exists');
  throw error;
};

export function createEntityService(db: Knex) {
  const entities = createEntityRepository(db);
  const addresses = createAddressRepository(db);

  async function withAddresses(organisationId: string, rows: EntityRow[]): Promise<Entity[]> {
    const byEntity = await addresses.listByEntity(organisationId, rows.map((row) => row.id));
    return rows.map((row) => toEntity(row, byEntity.get(row.id) ?? []));
  }

  async function found(organisationId: string, row: EntityRow | undefined): Promise<Entity> {
    const [entity] = await withAddresses(organisationId, [orNotFound(row, 'Entity')]);
    return entity!;
  }

  return {
    /** The entity and its first address are written together or not at all. */
    async create(organisationId: string, input: CreateEntityBody): Promise<Entity> {
      return db.transaction(async (trx) => {
        const customerId = input.type === 'customer' ? input.customerId : null;
        // The customer stays locked until commit, so deleting it cannot miss the entity made here.
        if (customerId && !(await createCustomerRepository(trx).lockLive(organisationId, customerId))) throw AppError.notFound('Customer');
        const row = await createEntityRepository(trx)
          .insert(organisationId, {
            type: input.type,
            name: input.name,
            customerId,
            identifier: input.identifier,
            taxId: input.taxId,
            currency: input.currency,
          })
          .catch(duplicateIdentifier);
        const address = input.address ? await createAddressRepository(trx).insert(organisationId, row.id, input.address) : undefined;
        return toEntity(row, address ? [toAddress(address)] : []);
      });
    },

    async getById(organisationId: string, id: string): Promise<Entity> {
      return found(organisationId, await entities.findById(organisationId, id));
    },

    async getByIdentifier(organisationId: string, identifier: string): Promise<Entity> {
      return found(organisationId, await entities.findByIdentifier(organisationId, identifier));
    },

    async list(organisationId: string, paging: PageQuery, filter: { type?: EntityType }): Promise<Page<Entity>> {
      const page = await entities.list(organisationId, paging, filter);
      return { ...page, items: await withAddresses(organisationId, page.items) };
    },

    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await entities.softDelete(organisationId, id))) throw AppError.notFound('Entity');
    },
  };
}

export type EntityService = ReturnType<typeof createEntityService>;
