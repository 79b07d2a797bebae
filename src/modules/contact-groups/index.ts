import type { Knex } from 'knex';
import { createContactGroupRepository } from './contact-groups.repository';

export { createContactGroupService } from './contact-groups.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type ContactGroupAccess = Pick<ReturnType<typeof createContactGroupRepository>, 'emailsOfCustomer'>;
export const contactGroupsIn = (db: Knex): ContactGroupAccess => createContactGroupRepository(db);
