import type { Knex } from 'knex';
import { organisationToday } from '../organisation-settings';
import { createAddressRepository } from './addresses.repository';
import { createCustomerRepository } from './customers.repository';
import { createEntityRepository } from './entities.repository';

export type { Address } from './addresses.repository';
export { createAddressService } from './addresses.service';
export { customerSchema } from './customers.schemas';
export { createCustomerService } from './customers.service';
export type { CustomerService, CustomerUse } from './customers.service';
export type { EntityRow, EntityType } from './entities.repository';
export { entitySchema } from './entities.schemas';
export { createEntityService } from './entities.service';
export type { EntityService } from './entities.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type AddressAccess = Pick<ReturnType<typeof createAddressRepository>, 'listByEntity'>;
export const addressesIn = (db: Knex): AddressAccess => createAddressRepository(db);

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type CustomerAccess = Pick<ReturnType<typeof createCustomerRepository>, 'findAnyById' | 'findById' | 'liveIds' | 'lockLive'>;
export const customersIn = (db: Knex): CustomerAccess => createCustomerRepository(db);

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type EntityAccess = Pick<ReturnType<typeof createEntityRepository>, 'customerEntitiesOf' | 'customerEntityIds' | 'customersOfEntities' | 'firstLive' | 'liveCustomerEntities' | 'liveCustomerEntityIds'>;
export const entitiesIn = (db: Knex): EntityAccess => createEntityRepository(db);

/** The customer's own time zone; null when it has none (the organisation's applies). */
export async function customerZone(db: Knex, organisationId: string, customerId: string): Promise<string | null> {
  return (await createCustomerRepository(db).findAnyById(organisationId, customerId))?.timezone ?? null;
}

/** Today (or the day of `at`) in the customer's time zone, else the organisation's: the day its documents are stamped with. */
export async function customerToday(db: Knex, organisationId: string, customerId: string, at: Date = new Date()): Promise<string> {
  return organisationToday(db, organisationId, await customerZone(db, organisationId, customerId), at);
}
