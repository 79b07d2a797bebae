import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';

export interface SkuGroupRow {
  id: string;
  organisation_id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface SkuRow {
  id: string;
  organisation_id: string;
  code: string;
  name: string;
  description: string | null;
  sku_group_id: string | null;
  attributes: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface SkuGroup {
  id: string;
  name: string;
  description: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Sku {
  id: string;
  code: string;
  name: string;
  description: string | null;
  skuGroupId: string | null;
  attributes: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface NewSku {
  code: string;
  name: string;
  description?: string;
  skuGroupId?: string;
  attributes: Record<string, unknown>;
}

export function toSkuGroup(row: SkuGroupRow): SkuGroup {
  return { id: row.id, name: row.name, description: row.description, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() };
}

export function toSku(row: SkuRow): Sku {
  return {
    id: row.id,
    code: row.code,
    name: row.name,
    description: row.description,
    skuGroupId: row.sku_group_id,
    attributes: row.attributes,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** SKU groups. `db` may be a transaction. */
export function createSkuGroupRepository(db: Knex) {
  const scoped = (organisationId: string) => db<SkuGroupRow>('sku_groups').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, group: { name: string; description?: string }): Promise<SkuGroupRow> {
      const [row] = await db('sku_groups')
        .insert({ id: newId('skg'), organisation_id: organisationId, name: group.name, description: group.description ?? null })
        .returning<SkuGroupRow[]>('*');
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<SkuGroupRow | undefined> {
      return scoped(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery): Promise<Page<SkuGroup>> {
      return paginate(scoped(organisationId).select('*'), paging, { searchColumns: ['name'], map: toSkuGroup });
    },

    async delete(organisationId: string, id: string): Promise<void> {
      await scoped(organisationId).where({ id }).delete();
    },
  };
}

/** SKUs. `db` may be a transaction. */
export function createSkuRepository(db: Knex) {
  const scoped = (organisationId: string) => db<SkuRow>('skus').where({ organisation_id: organisationId });

  return {
    async create(organisationId: string, sku: NewSku): Promise<SkuRow> {
      const [row] = await db('skus')
        .insert({
          id: newId('sku'),
          organisation_id: organisationId,
          code: sku.code,
          name: sku.name,
          description: sku.description ?? null,
          sku_group_id: sku.skuGroupId ?? null,
          attributes: JSON.stringify(sku.attributes),
        })
        .returning<SkuRow[]>('*');
      return row!;
    },

    async findById(organisationId: string, id: string): Promise<SkuRow | undefined> {
      return scoped(organisationId).where({ id }).first();
    },

    async list(organisationId: string, paging: PageQuery, skuGroupId?: string): Promise<Page<Sku>> {
      const rows = scoped(organisationId).select('*');
      if (skuGroupId) rows.where({ sku_group_id: skuGroupId });
      return paginate(rows, paging, { searchColumns: ['code', 'name'], map: toSku });
    },

    async anyInGroup(organisationId: string, skuGroupId: string): Promise<boolean> {
      return Boolean(await scoped(organisationId).where({ sku_group_id: skuGroupId }).first('id'));
    },

    async setAttributes(organisationId: string, id: string, attributes: Record<string, unknown>): Promise<SkuRow | undefined> {
      const [row] = await db('skus')
        .where({ organisation_id: organisationId, id })
        .update({ attributes: JSON.stringify(attributes), updated_at: db.fn.now() })
        .returning<SkuRow[]>('*');
      return row;
    },
  };
}
