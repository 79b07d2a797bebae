import { z } from 'zod';
import type { AppDeps } from '../../deps';
import { isUniqueViolation } from '../../db/knex';
import { newId } from '../../db/ids';
import { AppError } from '../../domain/errors';
import { paginate, pageOf, pageQuery } from '../../http/paging';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, timestamps } from '../../http/schemas';
import { assertValidAttributes } from '../attributes/attributes.routes';

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

interface SkuRow {
  id: string;
  code: string;
  name: string;
  description: string | null;
  sku_group_id: string | null;
  attributes: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const toGroup = (row: { id: string; name: string; description: string | null; created_at: Date; updated_at: Date }) => ({
  id: row.id,
  name: row.name,
  description: row.description,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

const toSku = (row: SkuRow) => ({
  id: row.id,
  code: row.code,
  name: row.name,
  description: row.description,
  skuGroupId: row.sku_group_id,
  attributes: row.attributes,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});

export function catalogRoutes(deps: AppDeps): Route[] {
  const { db } = deps;

  async function requireGroup(organisationId: string, id: string) {
    const row = await db('sku_groups').where({ organisation_id: organisationId, id }).first();
    if (!row) throw AppError.notFound('SKU group');
    return row;
  }

  async function requireSku(organisationId: string, id: string): Promise<SkuRow> {
    const row = await db('skus').where({ organisation_id: organisationId, id }).first<SkuRow | undefined>();
    if (!row) throw AppError.notFound('SKU');
    return row;
  }

  return [
    defineRoute({
      method: 'get',
      path: '/catalog/sku-groups',
      summary: 'List SKU groups',
      tag: 'Catalog',
      access: requires('SkuGroupService:getSkuGroups'),
      query: pageQuery,
      response: pageOf(skuGroupSchema),
      handler: async ({ query, auth }) => paginate(db('sku_groups').where({ organisation_id: auth.organisationId }).select('*'), query, { searchColumns: ['name'], map: toGroup }),
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/sku-groups/{id}',
      summary: 'Read a SKU group',
      tag: 'Catalog',
      access: requires('SkuGroupService:getSkuGroups'),
      params: idParam,
      response: skuGroupSchema,
      handler: async ({ params, auth }) => toGroup(await requireGroup(auth.organisationId, params.id)),
    }),
    defineRoute({
      method: 'post',
      path: '/catalog/sku-groups',
      summary: 'Create a SKU group (Admin only)',
      tag: 'Catalog',
      access: requires('SkuGroupService:createSkuGroup'),
      body: z.object({ name: z.string().trim().min(1).max(200), description: z.string().max(2000).optional() }),
      response: skuGroupSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        const [row] = await db('sku_groups')
          .insert({ id: newId('skg'), organisation_id: auth.organisationId, name: body.name, description: body.description ?? null })
          .returning('*')
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw AppError.conflict('A SKU group with this name exists');
            throw error;
          });
        return toGroup(row);
      },
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
        await requireGroup(auth.organisationId, params.id);
        if (await db('skus').where({ organisation_id: auth.organisationId, sku_group_id: params.id }).first('id')) throw AppError.conflict('The SKU group still holds SKUs');
        await db('sku_groups').where({ organisation_id: auth.organisationId, id: params.id }).delete();
        return { id: params.id, deleted: true };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/skus',
      summary: 'List SKUs, optionally of one group; search matches code or name',
      tag: 'Catalog',
      access: requires('SkuService:getSkus'),
      query: pageQuery.extend({ skuGroupId: z.string().optional() }),
      response: pageOf(skuSchema),
      handler: async ({ query, auth }) => {
        const rows = db('skus').where({ organisation_id: auth.organisationId }).select('*');
        if (query.skuGroupId) rows.where({ sku_group_id: query.skuGroupId });
        return paginate(rows, query, { searchColumns: ['code', 'name'], map: toSku });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/catalog/skus/{id}',
      summary: 'Read a SKU',
      tag: 'Catalog',
      access: requires('SkuService:getSkuById'),
      params: idParam,
      response: skuSchema,
      handler: async ({ params, auth }) => toSku(await requireSku(auth.organisationId, params.id)),
    }),
    defineRoute({
      method: 'post',
      path: '/catalog/skus',
      summary: 'Create a SKU; attributes are checked against the custom attributes of object type sku',
      tag: 'Catalog',
      access: requires('SkuService:createSku'),
      body: z.object({
        code: z.string().trim().min(1).max(100),
        name: z.string().trim().min(1).max(200),
        description: z.string().max(2000).optional(),
        skuGroupId: z.string().optional(),
        attributes: z.record(z.string(), z.unknown()).default({}),
      }),
      response: skuSchema,
      successStatus: 201,
      handler: async ({ body, auth }) => {
        if (body.skuGroupId) await requireGroup(auth.organisationId, body.skuGroupId);
        await assertValidAttributes(db, auth.organisationId, 'sku', body.attributes, 'body.attributes');
        const [row] = await db('skus')
          .insert({
            id: newId('sku'),
            organisation_id: auth.organisationId,
            code: body.code,
            name: body.name,
            description: body.description ?? null,
            sku_group_id: body.skuGroupId ?? null,
            attributes: JSON.stringify(body.attributes),
          })
          .returning<SkuRow[]>('*')
          .catch((error: unknown) => {
            if (isUniqueViolation(error)) throw AppError.conflict('A SKU with this code exists');
            throw error;
          });
        return toSku(row!);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/catalog/skus/{skuId}',
      summary: "Replace a SKU's attributes, checked against the custom attributes of object type sku",
      tag: 'Catalog',
      access: requires('AttributeService:updateAttribute'),
      params: z.object({ skuId: z.string().min(1).max(64) }),
      body: z.object({ attributes: z.record(z.string(), z.unknown()) }),
      response: skuSchema,
      handler: async ({ params, body, auth }) => {
        await requireSku(auth.organisationId, params.skuId);
        await assertValidAttributes(db, auth.organisationId, 'sku', body.attributes, 'body.attributes');
        const [row] = await db('skus')
          .where({ organisation_id: auth.organisationId, id: params.skuId })
          .update({ attributes: JSON.stringify(body.attributes), updated_at: db.fn.now() })
          .returning<SkuRow[]>('*');
        return toSku(row!);
      },
    }),
  ];
}
