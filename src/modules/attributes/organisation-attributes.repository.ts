import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface OrganisationAttributeRow {
  id: string;
  organisation_id: string;
  key: string;
  value: unknown;
  created_at: Date;
  updated_at: Date;
}

export interface OrganisationAttribute {
  id: string;
  key: string;
  value: unknown;
  createdAt: string;
  updatedAt: string;
}

export function toOrganisationAttribute(row: OrganisationAttributeRow): OrganisationAttribute {
  return {
    id: row.id,
    key: row.key,
    value: row.value,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

// jsonb is sent as JSON text: pg would turn an array into a Postgres array and send a string unquoted.
const jsonValue = (value: unknown) => JSON.stringify(value ?? null);

/** The organisation's key/value attributes. `db` may be a transaction. */
export function createOrganisationAttributeRepository(db: Knex) {
  const scoped = (organisationId: string) => db<OrganisationAttributeRow>('organisation_attributes').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, key: string, value: unknown): Promise<OrganisationAttributeRow> {
      const [row] = await db('organisation_attributes')
        .insert({ id: newId('oat'), organisation_id: organisationId, key, value: jsonValue(value) })
        .returning<OrganisationAttributeRow[]>('*');
      return row!;
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<OrganisationAttribute>> {
      return paginate(scoped(organisationId).select('*'), paging, { searchColumns: ['key'], map: toOrganisationAttribute });
    },

    async setValue(organisationId: string, id: string, value: unknown): Promise<OrganisationAttributeRow | undefined> {
      const [row] = await db('organisation_attributes')
        .where({ organisation_id: organisationId, id })
        .update({ value: jsonValue(value), updated_at: db.fn.now() })
        .returning<OrganisationAttributeRow[]>('*');
      return row;
    },

    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await scoped(organisationId).where({ id }).delete()) > 0;
    },
  };
}
