import type { Knex } from 'knex';
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { isUniqueViolation } from '../../db/knex';
import { newId } from '../../db/ids';
import { validateAttributes, type AttributeDefinition } from '../../domain/attributes';
import { AppError, ERROR_CODES } from '../../domain/errors';
import { paginate, pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, timestamps } from '../../http/schemas';

const OBJECT_TYPES = ['sku', 'customer', 'entity', 'contract', 'invoice'] as const;
type ObjectType = (typeof OBJECT_TYPES)[number];

const definitionBody = z
  .object({
    objectType: z.enum(OBJECT_TYPES),
    key: z.string().regex(/^[A-Za-z][\w-]{0,63}$/, 'letters, digits, _ and -, starting with a letter'),
    label: z.string().max(200).optional(),
    type: z.enum(['string', 'number', 'boolean', 'date', 'enum']),
    required: z.boolean().default(false),
    allowedValues: z.array(z.string().min(1)).min(1).max(200).optional(),
  })
  .refine((body) => (body.type === 'enum') === (body.allowedValues !== undefined), { message: 'allowedValues is required for enum, and only for enum', path: ['allowedValues'] });

const definitionSchema = z.object({
  id: z.string(),
  objectType: z.enum(OBJECT_TYPES),
  key: z.string(),
  label: z.string().nullable(),
  type: z.enum(['string', 'number', 'boolean', 'date', 'enum']),
  required: z.boolean(),
  allowedValues: z.array(z.string()).nullable(),
  ...timestamps,
});

interface DefinitionRow {
  id: string;
  object_type: ObjectType;
  key: string;
  label: string | null;
  type: AttributeDefinition['type'];
  required: boolean;
  allowed_values: string[] | null;
  created_at: Date;
  updated_at: Date;
}

const toDefinition = (row: DefinitionRow) => ({
  id: row.id,
  objectType: row.object_type,
  key: row.key,
  label: row.label,
  type: row.type,
  required: row.required,
  allowedValues: row.allowed_values,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

/** The object type's definitions, for validating values (SKU attributes use this). */
export async function attributeDefinitionsOf(db: Knex, organisationId: string, objectType: ObjectType): Promise<AttributeDefinition[]> {
  const rows: DefinitionRow[] = await db('attribute_definitions').where({ organisation_id: organisationId, object_type: objectType });
  return rows.map((row) => ({ key: row.key, type: row.type, required: row.required, allowedValues: row.allowed_values }));
}

/** Throws a 400 listing every problem of `values` against the object type's definitions. */
export async function assertValidAttributes(db: Knex, organisationId: string, objectType: ObjectType, values: Record<string, unknown>, path: string): Promise<void> {
  const problems = validateAttributes(await attributeDefinitionsOf(db, organisationId, objectType), values, path);
  if (problems.length) throw new AppError('validation', 'Validation failed', problems.map((p) => ({ code: ERROR_CODES.validation, path: p.path, message: p.message })));
}

const orgAttributeSchema = z.object({ id: z.string(), key: z.string(), value: z.unknown(), ...timestamps });
const toOrgAttribute = (row: { id: string; key: string; value: unknown; created_at: Date; updated_at: Date }) => ({
  id: row.id,
  key: row.key,
  value: row.value,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export function attributeRoutes(deps: AppDeps): Route[] {
  const { db } = deps;
  const duplicate = (what: string) => (error: unknown): never => {
    if (isUniqueViolation(error)) throw AppError.conflict(`${what} exists`);
    throw error;
  };

  async function findDefinition(organisationId: string, id: string): Promise<DefinitionRow> {
    const row = await db('attribute_definitions').where({ organisation_id: organisationId, id }).first<DefinitionRow | undefined>();
    if (!row) throw AppError.notFound('Attribute');
    return row;
  }

  const definitionColumns = (body: z.output<typeof definitionBody>) => ({
    object_type: body.objectType,
    key: body.key,
    label: body.label ?? null,
    type: body.type,
    required: body.required,
    allowed_values: body.allowedValues ? JSON.stringify(body.allowedValues) : null,
  });

  return [
    defineRoute({
      method: 'post',
      path: '/attributes',
      summary: 'Define a custom attribute for an object type',
      tag: 'Attributes',
      access: requires('AttributeService:createAttribute'),
      body: definitionBody,
      response: definitionSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        const [row] = await db('attribute_definitions')
          .insert({ id: newId('atd'), organisation_id: auth.organisationId, ...definitionColumns(body) })
          .returning<DefinitionRow[]>('*')
          .catch(duplicate('An attribute with this key for this object type'));
        return toDefinition(row!);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/attributes',
      summary: 'List attribute definitions, optionally of one object type',
      tag: 'Attributes',
      access: requires('AttributeService:getAttributes'),
      query: pageQuery.extend({ objectType: z.enum(OBJECT_TYPES).optional() }),
      response: pageOf(definitionSchema),
      handler: async ({ query, auth }) => {
        const rows = db('attribute_definitions').where({ organisation_id: auth.organisationId }).select('*');
        if (query.objectType) rows.where({ object_type: query.objectType });
        return paginate(rows, query, { searchColumns: ['key', 'label'], map: toDefinition });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/attributes/{id}',
      summary: 'Read an attribute definition',
      tag: 'Attributes',
      access: requires('AttributeService:getAttributes'),
      params: idParam,
      response: definitionSchema,
      handler: async ({ params, auth }) => toDefinition(await findDefinition(auth.organisationId, params.id)),
    }),
    defineRoute({
      method: 'put',
      path: '/attributes/{id}',
      summary: 'Replace an attribute definition',
      tag: 'Attributes',
      access: requires('AttributeService:updateAttribute'),
      params: idParam,
      body: definitionBody,
      response: definitionSchema,
      handler: async ({ params, body, auth }) => {
        await findDefinition(auth.organisationId, params.id);
        const [row] = await db('attribute_definitions')
          .where({ organisation_id: auth.organisationId, id: params.id })
          .update({ ...definitionColumns(body), updated_at: db.fn.now() })
          .returning<DefinitionRow[]>('*')
          .catch(duplicate('An attribute with this key for this object type'));
        return toDefinition(row!);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/attributes/{id}',
      summary: 'Delete an attribute definition (values already stored are kept)',
      tag: 'Attributes',
      access: requires('AttributeService:deleteAttribute'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await findDefinition(auth.organisationId, params.id);
        await db('attribute_definitions').where({ organisation_id: auth.organisationId, id: params.id }).delete();
        return { id: params.id, deleted: true };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/attributes/validate',
      summary: 'Check attribute values against the definitions of an object type',
      tag: 'Attributes',
      access: requires('AttributeService:validateAttributes'),
      body: z.object({ objectType: z.enum(OBJECT_TYPES), attributes: z.record(z.string(), z.unknown()) }),
      response: z.object({ valid: z.boolean(), errors: z.array(z.object({ path: z.string(), message: z.string() })) }),
      handler: async ({ body, auth }) => {
        const errors = validateAttributes(await attributeDefinitionsOf(db, auth.organisationId, body.objectType), body.attributes);
        return { valid: errors.length === 0, errors };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/organisation/attributes',
      summary: 'Set a key/value attribute of the organisation',
      tag: 'Organisation attributes',
      access: requires('OrganisationAttributeService:create'),
      body: z.object({ key: z.string().regex(/^[A-Za-z][\w.-]{0,63}$/), value: z.unknown() }),
      response: orgAttributeSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        const [row] = await db('organisation_attributes')
          .insert({ id: newId('oat'), organisation_id: auth.organisationId, key: body.key, value: JSON.stringify(body.value ?? null) })
          .returning('*')
          .catch(duplicate('An organisation attribute with this key'));
        return toOrgAttribute(row);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/organisation/attributes',
      summary: "The organisation's attributes",
      tag: 'Organisation attributes',
      access: requires('OrganisationAttributeService:get'),
      query: pageQuery,
      response: pageOf(orgAttributeSchema),
      handler: async ({ query, auth }) =>
        paginate(db('organisation_attributes').where({ organisation_id: auth.organisationId }).select('*'), query, { searchColumns: ['key'], map: toOrgAttribute }),
    }),
    defineRoute({
      method: 'put',
      path: '/organisation/attributes/{id}',
      summary: "Change an organisation attribute's value",
      tag: 'Organisation attributes',
      access: requires('OrganisationAttributeService:update'),
      params: idParam,
      body: z.object({ value: z.unknown() }),
      response: orgAttributeSchema,
      handler: async ({ params, body, auth }) => {
        const [row] = await db('organisation_attributes')
          .where({ organisation_id: auth.organisationId, id: params.id })
          .update({ value: JSON.stringify(body.value ?? null), updated_at: db.fn.now() })
          .returning('*');
        if (!row) throw AppError.notFound('Organisation attribute');
        return toOrgAttribute(row);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/organisation/attributes/{id}',
      summary: 'Delete an organisation attribute',
      tag: 'Organisation attributes',
      access: requires('OrganisationAttributeService:delete'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        const deleted = await db('organisation_attributes').where({ organisation_id: auth.organisationId, id: params.id }).delete();
        if (!deleted) throw AppError.notFound('Organisation attribute');
        return { id: params.id, deleted: true };
      },
    }),
  ];
}
