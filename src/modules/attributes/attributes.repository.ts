import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import type { AttributeDefinition, AttributeObjectType, AttributeType } from '../../domain/attributes';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface AttributeDefinitionRow {
  id: string;
  organisation_id: string;
  object_type: AttributeObjectType;
  key: string;
  label: string | null;
  type: AttributeType;
  required: boolean;
  allowed_values: string[] | null;
  created_at: Date;
  updated_at: Date;
}

/** What a caller defines; the same for a new definition and a replaced one. */
export interface AttributeDefinitionInput {
  objectType: AttributeObjectType;
  key: string;
  label?: string;
  type: AttributeType;
  required: boolean;
  allowedValues?: string[];
}

export interface AttributeDefinitionView {
  id: string;
  objectType: AttributeObjectType;
  key: string;
  label: string | null;
  type: AttributeType;
  required: boolean;
  allowedValues: string[] | null;
  createdAt: string;
  updatedAt: string;
}

export function toAttributeDefinition(row: AttributeDefinitionRow): AttributeDefinitionView {
  return {
    id: row.id,
    objectType: row.object_type,
    key: row.key,
    label: row.label,
    type: row.type,
    required: row.required,
    allowedValues: row.allowed_values,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const columnsOf = (input: AttributeDefinitionInput) => ({
  object_type: input.objectType,
  key: input.key,
  label: input.label ?? null,
  type: input.type,
  required: input.required,
  allowed_values: input.allowedValues ? JSON.stringify(input.allowedValues) : null,
});

/** Attribute definitions. `db` may be a transaction. */
export function createAttributeDefinitionRepository(db: Knex) {
  const scoped = (organisationId: string) => db<AttributeDefinitionRow>('attribute_definitions').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, input: AttributeDefinitionInput): Promise<AttributeDefinitionRow> {
      const [row] = await db('attribute_definitions')
        .insert({ id: newId('atd'), organisation_id: organisationId, ...columnsOf(input) })
        .returning<AttributeDefinitionRow[]>('*');
      return row!;
    },

    async replace(organisationId: string, id: string, input: AttributeDefinitionInput): Promise<AttributeDefinitionRow | undefined> {
      const [row] = await db('attribute_definitions')
        .where({ organisation_id: organisationId, id })
        .update({ ...columnsOf(input), updated_at: db.fn.now() })
        .returning<AttributeDefinitionRow[]>('*');
      return row;
    },

    async findById(organisationId: string, id: string): Promise<AttributeDefinitionRow | undefined> {
      return scoped(organisationId).where({ id }).first();
    },

    async delete(organisationId: string, id: string): Promise<boolean> {
      return (await scoped(organisationId).where({ id }).delete()) > 0;
    },

    async list(organisationId: string, paging: PageQuery, objectType?: AttributeObjectType): Promise<Page<AttributeDefinitionView>> {
      const rows = scoped(organisationId).select('*');
      if (objectType) rows.where({ object_type: objectType });
      return paginate(rows, paging, { searchColumns: ['key', 'label'], map: toAttributeDefinition });
    },

    /** The object type's definitions, in the shape the pure check takes. */
    async definitionsOf(organisationId: string, objectType: AttributeObjectType): Promise<AttributeDefinition[]> {
      const rows = await scoped(organisationId).where({ object_type: objectType });
      return rows.map((row) => ({ key: row.key, type: row.type, required: row.required, allowedValues: row.allowed_values }));
    },
  };
}

export type AttributeDefinitionRepository = ReturnType<typeof createAttributeDefinitionRepository>;
