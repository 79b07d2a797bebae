import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import { createOrganisationAttributeRepository, toOrganisationAttribute, type OrganisationAttribute } from './organisation-attributes.repository';

const duplicateKey = (error: unknown): never => {
  if (isUniqueViolation(error)) throw AppError.conflict('An organisation attribute with this key exists');
  throw error;
};

/** Key/value attributes of the organisation itself. */
export function createOrganisationAttributeService(db: Knex) {
  const attributes = createOrganisationAttributeRepository(db);

  return {
    async create(organisationId: string, key: string, value: unknown): Promise<OrganisationAttribute> {
      return toOrganisationAttribute(await attributes.create(organisationId, key, value).catch(duplicateKey));
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<OrganisationAttribute>> {
      return attributes.list(organisationId, paging);
    },

    async setValue(organisationId: string, id: string, value: unknown): Promise<OrganisationAttribute> {
      return toOrganisationAttribute(orNotFound(await attributes.setValue(organisationId, id, value), 'Organisation attribute'));
    },

    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await attributes.delete(organisationId, id))) throw AppError.notFound('Organisation attribute');
    },
  };
}

export type OrganisationAttributeService = ReturnType<typeof createOrganisationAttributeService>;
