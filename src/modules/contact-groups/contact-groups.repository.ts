import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import { customersIn } from '../customers';
import type { CreateContactGroupBody } from './contact-groups.schemas';

export interface ContactGroupRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
}

export interface ContactRow {
  id: string;
  organisation_id: string;
  contact_group_id: string;
  name: string;
  email: string;
  created_at: Date;
  updated_at: Date;
}

export interface Contact {
  id: string;
  name: string;
  email: string;
  createdAt: string;
  updatedAt: string;
}

export interface ContactGroup {
  id: string;
  customerId: string;
  name: string;
  contacts: Contact[];
  createdAt: string;
  updatedAt: string;
}

export function toContact(row: ContactRow): Contact {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export function toContactGroup(row: ContactGroupRow, contacts: Contact[]): ContactGroup {
  return {
    id: row.id,
    customerId: row.customer_id,
    name: row.name,
    contacts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A group vanishes with its customer: only groups of live customers are read or deleted. */
export function createContactGroupRepository(db: Knex) {
  const live = (organisationId: string) =>
    db<ContactGroupRow>('contact_groups').where({ organisation_id: organisationId }).whereIn('customer_id', customersIn(db).liveIds());

  return {
    async insert(organisationId: string, group: CreateContactGroupBody): Promise<ContactGroupRow> {
      const [row] = await db<ContactGroupRow>('contact_groups')
        .insert({ id: newId('cgr'), organisation_id: organisationId, customer_id: group.customerId, name: group.name })
        .returning('*');
      await db('contacts').insert(
        group.contacts.map((contact) => ({
          id: newId('ctc'),
          organisation_id: organisationId,
          contact_group_id: row!.id,
          name: contact.name,
          email: contact.email,
        })),
      );
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<ContactGroupRow | undefined> {
      return live(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery, filter: { customerId?: string }): Promise<Page<ContactGroupRow>> {
      const query = live(organisationId).select('*');
      if (filter.customerId) query.where({ customer_id: filter.customerId });
      return paginate<ContactGroupRow, ContactGroupRow>(query, paging, { searchColumns: ['name'], map: (row) => row });
    },

    /** One query for a whole page of groups. */
    async contactsByGroup(organisationId: string, groupIds: string[]): Promise<Map<string, Contact[]>> {
      const byGroup = new Map<string, Contact[]>();
      if (groupIds.length === 0) return byGroup;
      const rows = await db<ContactRow>('contacts')
        .where({ organisation_id: organisationId })
        .whereIn('contact_group_id', groupIds)
        .orderBy([{ column: 'name' }, { column: 'email' }, { column: 'id' }]);
      for (const row of rows) byGroup.set(row.contact_group_id, [...(byGroup.get(row.contact_group_id) ?? []), toContact(row)]);
      return byGroup;
    },

    /** Every distinct address of the customer's contact groups: who receives its invoices. */
    async emailsOfCustomer(organisationId: string, customerId: string): Promise<string[]> {
      const rows = await db('contacts as c')
        .join('contact_groups as g', 'g.id', 'c.contact_group_id')
        .where({ 'g.organisation_id': organisationId, 'g.customer_id': customerId })
        .distinct<{ email: string }[]>('c.email')
        .orderBy('c.email');
      return rows.map((row) => row.email);
    },

    /** The group's contacts go with it (foreign key cascade). */
    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await live(organisationId).where({ id }).delete()) > 0;
    },
  };
}

export type ContactGroupRepository = ReturnType<typeof createContactGroupRepository>;
