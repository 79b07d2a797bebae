import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/knex';
import { AppError, orNotFound } from '../../domain/errors';
import type { Page, PageQuery } from '../../http/paging';
import type { AttributeService } from '../attributes';
import { createSkuGroupRepository, createSkuRepository, toSku, toSkuGroup, type NewSku, type Sku, type SkuGroup, type SkuGroupRow, type SkuRow } from './catalog.repository';

const conflictIfDuplicate =
  (message: string) =>
  (error: unknown): never => {
    if (isUniqueViolation(error)) throw AppError.conflict(message);
    throw error;
  };

/** SKU groups and SKUs; a SKU's attributes obey the custom attributes of object type sku. */
export function createCatalogService(db: Knex, attributes: AttributeService) {
  const groups = createSkuGroupRepository(db);
  const skus = createSkuRepository(db);

  async function requireGroup(organisationId: string, id: string): Promise<SkuGroupRow> {
    return orNotFound(await groups.findById(organisationId, id), 'SKU group');
  }

  async function requireSku(organisationId: string, id: string): Promise<SkuRow> {
    return orNotFound(await skus.findById(organisationId, id), 'SKU');
  }

  return {
    async listGroups(organisationId: string, paging: PageQuery): Promise<Page<SkuGroup>> {
      return groups.list(organisationId, paging);
    },

    async getGroup(organisationId: string, id: string): Promise<SkuGroup> {
      return toSkuGroup(await requireGroup(organisationId, id));
    },

    async createGroup(organisationId: string, group: { name: string; description?: string }): Promise<SkuGroup> {
      return toSkuGroup(await groups.create(organisationId, group).catch(conflictIfDuplicate('A SKU group with this name exists')));
    },

    /** Only an empty group goes. */
    async deleteGroup(organisationId: string, id: string): Promise<void> {
      await requireGroup(organisationId, id);
      if (await skus.anyInGroup(organisationId, id)) throw AppError.conflict('The SKU group still holds SKUs');
      await groups.delete(organisationId, id);
    },

    async listSkus(organisationId: string, paging: PageQuery, skuGroupId?: string): Promise<Page<Sku>> {
      return skus.list(organisationId, paging, skuGroupId);
    },

    async getSku(organisationId: string, id: string): Promise<Sku> {
      return toSku(await requireSku(organisationId, id));
    },

    async createSku(organisationId: string, sku: NewSku): Promise<Sku> {
      if (sku.skuGroupId) await requireGroup(organisationId, sku.skuGroupId);
      await attributes.assertValid(organisationId, 'sku', sku.attributes, 'body.attributes');
      return toSku(await skus.create(organisationId, sku).catch(conflictIfDuplicate('A SKU with this code exists')));
    },

    async replaceAttributes(organisationId: string, id: string, values: Record<string, unknown>): Promise<Sku> {
      await requireSku(organisationId, id);
      await attributes.assertValid(organisationId, 'sku', values, 'body.attributes');
      return toSku(orNotFound(await skus.setAttributes(organisationId, id, values), 'SKU'));
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
