import type { Knex } from 'knex';
import { AppError } from '../../domain/errors';
import { createEntityRepository } from './entities.repository';
import { createAddressRepository, toAddress, type Address } from './addresses.repository';
import type { AddressBody } from './addresses.schemas';

export function createAddressService(db: Knex) {
  return {
    /** The entity stays locked until the address is in, so a concurrent delete cannot slip between. */
    async create(organisationId: string, entityId: string, input: AddressBody): Promise<Address> {
      return db.transaction(async (trx) => {
        if (!(await createEntityRepository(trx).lockLive(organisationId, entityId))) throw AppError.notFound('Entity');
        return toAddress(await createAddressRepository(trx).insert(organisationId, entityId, input));
      });
    },

    /** Only an address of a live entity can be removed. */
    async delete(organisationId: string, entityId: string, id: string): Promise<void> {
      if (!(await createAddressRepository(db).delete(organisationId, entityId, id))) throw AppError.notFound('Address');
    },
  };
}
