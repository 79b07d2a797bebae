import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, timestamps, deleted, text, reference, freeText, jsonObject } from '../../http/schemas';

const skuGroupSchema = z.object({ id: z.string(), name: z.string(), description: z.string().nullable(), ...timestamps });
const skuSchema = z.object({
  id: z.string(),
  code: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  skuGroupId: z.string().nullable(),
  attributes: z.record(z.string(), z.unknown()),
  ...timestamps,
});

export function catalogRoutes(deps: AppDeps): Route[] {
  const { catalog } = deps.services;

  return [
    defineRoute({
      method: 'get',
      path: '/catalog/sku-groups',
      summary: 'List SKU groups',
      tag: 'Catalog',
      access: requires('SkuGroupService:getSkuGroups'),
      query: pageQuery,
      response: pageOf(skuGroupSchema),
      handler: async ({ query, auth }) => catalog.listGroups(auth.organisationId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/sku-groups/{id}',
      summary: 'Read a SKU group',
      tag: 'Catalog',
      access: requires('SkuGroupService:getSkuGroups'),
      params: idParam,
      response: skuGroupSchema,
      handler: async ({ params, auth }) => catalog.getGroup(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/catalog/sku-groups',
      summary: 'Create a SKU group (Admin only)',
      tag: 'Catalog',
      access: requires('SkuGroupService:createSkuGroup'),
      body: z.object({ name: text(200), description: freeText(2000).optional() }),
      response: skuGroupSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => catalog.createGroup(auth.organisationId, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/catalog/sku-groups/{id}',
      summary: 'Delete an empty SKU group (Admin only; 409 while it holds SKUs)',
      tag: 'Catalog',
      access: requires('SkuGroupService:deleteSkuGroup'),
      params: idParam,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await catalog.deleteGroup(auth.organisationId, params.id);
        return deleted(params.id);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/skus',
      summary: 'List SKUs, optionally of one group; search matches code or name',
      tag: 'Catalog',
      access: requires('SkuService:getSkus'),
      query: pageQuery.extend({ skuGroupId: reference().optional() }),
      response: pageOf(skuSchema),
      handler: async ({ query, auth }) => catalog.listSkus(auth.organisationId, query, query.skuGroupId),
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/skus/{id}',
      summary: 'Read a SKU',
      tag: 'Catalog',
      access: requires('SkuService:getSkuById'),
      params: idParam,
      response: skuSchema,
      handler: async ({ params, auth }) => catalog.getSku(auth.organisationId, params.id),
    }),
    defineRoute({
      method: 'post',
      path: '/catalog/skus',
      summary: 'Create a SKU; attributes are checked against the custom attributes of object type sku',
      tag: 'Catalog',
      access: requires('SkuService:createSku'),
      body: z.object({
        code: text(100),
        name: text(200),
        description: freeText(2000).optional(),
        skuGroupId: reference().optional(),
        attributes: jsonObject.default({}).describe('checked against the custom attributes of object type sku'),
      }),
      response: skuSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => catalog.createSku(auth.organisationId, body),
    }),
    defineRoute({
      method: 'put',
      path: '/catalog/skus/{id}',
      summary: "Replace a SKU's attributes, checked against the custom attributes of object type sku",
      tag: 'Catalog',
      access: requires('AttributeService:updateAttribute'),
      params: idParam,
      body: z.object({ attributes: jsonObject.describe('checked against the custom attributes of object type sku') }),
      response: skuSchema,
      handler: async ({ params, body, auth }) => catalog.replaceAttributes(auth.organisationId, params.id, body.attributes),
    }),
  ];
}
