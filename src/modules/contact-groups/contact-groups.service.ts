import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { customersIn } from '../customers';
import { createContactGroupRepository, toContactGroup, type ContactGroup, type ContactGroupRepository, type ContactGroupRow } from './contact-groups.repository';
import type { CreateContactGroupBody } from './contact-groups.schemas';

export function createContactGroupService(db: Knex) {
  const groups = createContactGroupRepository(db);

  async function withContacts(repository: ContactGroupRepository, organisationId: string, rows: ContactGroupRow[]): Promise<ContactGroup[]> {
    const byGroup = await repository.contactsByGroup(organisationId, rows.map((row) => row.id));
    return rows.map((row) => toContactGroup(row, byGroup.get(row.id) ?? []));
  }

  return {
    /** The group and its contacts are written together or not at all. */
    async create(organisationId: string, input: CreateContactGroupBody): Promise<ContactGroup> {
      return db.transaction(async (trx) => {
        // The customer stays locked until commit, so it cannot be deleted from under the new group.
        if (!(await customersIn(trx).lockLive(organisationId, input.customerId))) throw AppError.notFound('Customer');
        const repository = createContactGroupRepository(trx);
        const [group] = await withContacts(repository, organisationId, [await repository.insert(organisationId, input)]);
        return group!;
      });
    },

    async getById(organisationId: string, id: string): Promise<ContactGroup> {
      const row = orNotFound(await groups.findById(organisationId, id), 'Contact group');
      const [group] = await withContacts(groups, organisationId, [row]);
      return group!;
    },

    async list(organisationId: string, paging: PageQuery, filter: { customerId?: string }): Promise<Page<ContactGroup>> {
      const page = await groups.list(organisationId, paging, filter);
      return { ...page, items: await withContacts(groups, organisationId, page.items) };
    },

    /** The group's contacts go with it. */
    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await groups.delete(organisationId, id))) throw AppError.notFound('Contact group');
    },
  };
}
