import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { ATTRIBUTE_OBJECT_TYPES, ATTRIBUTE_TYPES } from '../../domain/attributes';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, freeText, idParam, jsonObject, reference, timestamps, deleted } from '../../http/schemas';

const objectType = z.enum(ATTRIBUTE_OBJECT_TYPES);
const attributeType = z.enum(ATTRIBUTE_TYPES);

const definitionFields = {
  objectType,
  key: z.string().regex(/^[A-Za-z][\w-]{0,63}$/, 'letters, digits, _ and -, starting with a letter'),
  label: freeText(200).optional(),
  required: z.boolean().default(false),
};

/** An enum attribute lists its allowed values; no other type has any. */
const definitionBody = z.discriminatedUnion('type', [
  z.strictObject({ ...definitionFields, type: attributeType.exclude(['enum']) }),
  z.object({
    ...definitionFields,
    type: z.literal('enum'),
    allowedValues: z
      .array(reference(200))
      .min(1)
      .max(200)
      .refine((values) => new Set(values).size === values.length, 'must not repeat a value')
      .meta({ uniqueItems: true }),
  }),
]);

const definitionSchema = z.object({
  id: z.string(),
  objectType,
  key: z.string(),
  label: z.string().nullable(),
  type: attributeType,
  required: z.boolean(),
  allowedValues: z.array(z.string()).nullable(),
  ...timestamps,
});

const orgAttributeSchema = z.object({ id: z.string(), key: z.string(), value: z.unknown(), ...timestamps });

export function attributeRoutes(deps: AppDeps): Route[] {
  const { attributes, organisationAttributes } = deps.services;

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
      handler: async ({ body, auth }) => attributes.create(auth.organisationId, body),
    }),
    defineRoute({
      method: 'get',
      path: '/attributes',
      summary: 'List attribute definitions, optionally of one object type',
      tag: 'Attributes',
      access: requires('AttributeService:getAttributes'),
      query: pageQuery.extend({ objectType: objectType.optional() }),
      response: pageOf(definitionSchema),
      handler: async ({ query, auth }) => attributes.list(auth.organisationId, query, query.objectType),
    }),
    defineRoute({
      method: 'get',
      path: '/attributes/{id}',
      summary: 'Read an attribute definition',
      tag: 'Attributes',
      access: requires('AttributeService:getAttributes'),
      params: idParam,
      response: definitionSchema,
      handler: async ({ params, auth }) => attributes.get(auth.organisationId, params.id),
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
      handler: async ({ params, body, auth }) => attributes.replace(auth.organisationId, params.id, body),
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
        await attributes.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/attributes/validate',
      summary: 'Check attribute values against the definitions of an object type',
      tag: 'Attributes',
      access: requires('AttributeService:validateAttributes'),
      body: z.object({ objectType, attributes: jsonObject }),
      response: z.object({ valid: z.boolean(), errors: z.array(z.object({ path: z.string(), message: z.string() })) }),
      handler: async ({ body, auth }) => attributes.validate(auth.organisationId, body.objectType, body.attributes),
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
      handler: async ({ body, auth }) => organisationAttributes.create(auth.organisationId, body.key, body.value),
    }),
    defineRoute({
      method: 'get',
      path: '/organisation/attributes',
      summary: "The organisation's attributes",
      tag: 'Organisation attributes',
      access: requires('OrganisationAttributeService:get'),
      query: pageQuery,
      response: pageOf(orgAttributeSchema),
      handler: async ({ query, auth }) => organisationAttributes.list(auth.organisationId, query),
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
      handler: async ({ params, body, auth }) => organisationAttributes.setValue(auth.organisationId, params.id, body.value),
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
        await organisationAttributes.delete(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
  ];
}
