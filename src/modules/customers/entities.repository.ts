import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import type { Address } from './addresses.schemas';

export const ENTITY_IDENTIFIER_UNIQUE = 'entities_identifier_unique';

export type EntityType = 'customer' | 'seller';

export interface EntityRow {
  id: string;
  organisation_id: string;
  type: EntityType;
  name: string;
  customer_id: string | null;
  identifier: string | null;
  tax_id: string | null;
  currency: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface Entity {
  id: string;
  type: EntityType;
  name: string;
  customerId: string | null;
  identifier: string | null;
  taxId: string | null;
  currency: string | null;
  addresses: Address[];
  createdAt: string;
  updatedAt: string;
}

export interface NewEntity {
  type: EntityType;
  name: string;
  customerId: string | null;
  identifier?: string;
  taxId?: string;
  currency?: string;
}

export function toEntity(row: EntityRow, addresses: Address[]): Entity {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    customerId: row.customer_id,
    identifier: row.identifier,
    taxId: row.tax_id,
    currency: row.currency,
    addresses,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Soft-deleted entities are kept because usage and invoices point at them; no read returns them. */
export function createEntityRepository(db: Knex) {
  const live = (organisationId: string) => db<EntityRow>('entities').where({ organisation_id: organisationId }).whereNull('deleted_at');

  return {
    async insert(organisationId: string, entity: NewEntity): Promise<EntityRow> {
      const [row] = await db<EntityRow>('entities')
        .insert({
          id: newId('ent'),
          organisation_id: organisationId,
          type: entity.type,
          name: entity.name,
          customer_id: entity.customerId,
          identifier: entity.identifier ?? null,
          tax_id: entity.taxId ?? null,
          currency: entity.currency ?? null,
        })
        .returning('*');
      return row!;
    },

    /** The ids of live entities, as a subquery for the tables that hang off an entity. */
    liveIds(): Knex.QueryBuilder {
      return db('entities').select('id').whereNull('deleted_at');
    },

    async findById(organisationId: string, id: string): Promise<EntityRow | undefined> {
      return live(organisationId).where({ id }).first();
    },

    async findByIdentifier(organisationId: string, identifier: string): Promise<EntityRow | undefined> {
      return live(organisationId).where({ identifier }).first();
    },

    /** Inside a transaction: holds the entity row until commit, so a concurrent delete waits for it. */
    async lockLive(organisationId: string, id: string): Promise<boolean> {
      return Boolean(await live(organisationId).where({ id }).forShare().first('id'));
    },

    /** The earliest live entity of a kind: who issues (seller) or receives (a customer's) an invoice. */
    async firstLive(organisationId: string, filter: { type: EntityType; customerId?: string }): Promise<EntityRow | undefined> {
      return live(organisationId)
        .where({ type: filter.type, ...(filter.customerId ? { customer_id: filter.customerId } : {}) })
        .orderBy([{ column: 'created_at' }, { column: 'id' }])
        .first();
    },

    /** The ids among `ids` of the organisation's live customer entities: one query for a whole usage chunk. */
    async liveCustomerEntityIds(organisationId: string, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await live(organisationId).where({ type: 'customer' }).whereIn('id', ids).select<{ id: string }[]>('id');
      return new Set(rows.map((row) => row.id));
    },

    /** Of the ids given, the live customer entities, each with its customer. */
    async liveCustomerEntities(organisationId: string, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await live(organisationId).where({ type: 'customer' }).whereIn('id', ids).select<Array<{ id: string; customer_id: string }>>('id', 'customer_id');
      return new Map(rows.map((row) => [row.id, row.customer_id]));
    },

    /** Of the ids given, the customer entities (deleted ones too), each with its customer. */
    async customersOfEntities(organisationId: string, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db('entities').where({ organisation_id: organisationId, type: 'customer' }).whereIn('id', ids).select<Array<{ id: string; customer_id: string }>>('id', 'customer_id');
      return new Map(rows.map((row) => [row.id, row.customer_id]));
    },

    /** Deleted ones too: usage recorded before a deletion still bills. */
    async customerEntityIds(organisationId: string, customerId: string): Promise<string[]> {
      return db('entities').where({ organisation_id: organisationId, customer_id: customerId, type: 'customer' }).pluck('id');
    },

    /** The customer entities of each of the customers. */
    async customerEntitiesOf(organisationId: string, customerIds: string[]): Promise<Array<{ id: string; customer_id: string }>> {
      if (customerIds.length === 0) return [];
      return db('entities').where({ organisation_id: organisationId, type: 'customer' }).whereIn('customer_id', customerIds).select('id', 'customer_id');
    },

    async list(organisationId: string, paging: PageQuery, filter: { type?: EntityType }): Promise<Page<EntityRow>> {
      const query = live(organisationId).select('*');
      if (filter.type) query.where({ type: filter.type });
      return paginate<EntityRow, EntityRow>(query, paging, { searchColumns: ['name', 'identifier'], map: (row) => row });
    },

    async softDelete(organisationId: string, id: string): Promise<boolean> {
      const deleted = await live(organisationId).where({ id }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() });
      return deleted > 0;
    },

    async softDeleteOfCustomer(organisationId: string, customerId: string): Promise<void> {
      await live(organisationId).where({ customer_id: customerId }).update({ deleted_at: db.fn.now(), updated_at: db.fn.now() });
    },
  };
}

export type EntityRepository = ReturnType<typeof createEntityRepository>;
