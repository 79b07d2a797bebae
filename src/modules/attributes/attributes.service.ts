import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { validateAttributes, type AttributeObjectType, type AttributeProblem } from '../../domain/attributes';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import {
  createAttributeDefinitionRepository,
  toAttributeDefinition,
  type AttributeDefinitionInput,
  type AttributeDefinitionView,
} from './attributes.repository';

const duplicateKey = (error: unknown): never => {
  if (isUniqueViolation(error)) throw AppError.conflict('An attribute with this key for this object type exists');
  throw error;
};

/** Custom attribute definitions, and the check other modules run on the values they store. */
export function createAttributeService(db: Knex) {
  const definitions = createAttributeDefinitionRepository(db);

  async function problemsOf(organisationId: string, objectType: AttributeObjectType, values: Record<string, unknown>, path?: string): Promise<AttributeProblem[]> {
    return validateAttributes(await definitions.definitionsOf(organisationId, objectType), values, path);
  }

  return {
    async create(organisationId: string, input: AttributeDefinitionInput): Promise<AttributeDefinitionView> {
      return toAttributeDefinition(await definitions.create(organisationId, input).catch(duplicateKey));
    },

    async list(organisationId: string, paging: PageQuery, objectType?: AttributeObjectType): Promise<Page<AttributeDefinitionView>> {
      return definitions.list(organisationId, paging, objectType);
    },

    async get(organisationId: string, id: string): Promise<AttributeDefinitionView> {
      return toAttributeDefinition(orNotFound(await definitions.findById(organisationId, id), 'Attribute'));
    },

    async replace(organisationId: string, id: string, input: AttributeDefinitionInput): Promise<AttributeDefinitionView> {
      return toAttributeDefinition(orNotFound(await definitions.replace(organisationId, id, input).catch(duplicateKey), 'Attribute'));
    },

    /** Values already stored under the key are kept. */
    async delete(organisationId: string, id: string): Promise<void> {
      if (!(await definitions.delete(organisationId, id))) throw AppError.notFound('Attribute');
    },

    /** Every problem of `values`, without failing: the answer of the validate endpoint. */
    async validate(organisationId: string, objectType: AttributeObjectType, values: Record<string, unknown>): Promise<{ valid: boolean; errors: AttributeProblem[] }> {
      const errors = await problemsOf(organisationId, objectType, values);
      return { valid: errors.length === 0, errors };
    },

    /** Throws a 400 listing every problem of `values` against the object type's definitions. */
    async assertValid(organisationId: string, objectType: AttributeObjectType, values: Record<string, unknown>, path: string): Promise<void> {
      const problems = await problemsOf(organisationId, objectType, values, path);
      if (problems.length) throw AppError.invalid(problems);
    },
  };
}

export type AttributeService = ReturnType<typeof createAttributeService>;
