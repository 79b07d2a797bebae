import type { Knex } from 'knex';
import type { ObjectDescriptor } from './object-registry';
import { objectQuery, type ObjectQuery } from './object-sql';

type Row = Record<string, unknown>;

/** Reads of any registered object through the query language. `db` may be a transaction. */
export function createObjectRepository(db: Knex) {
  return {
    /** Throws the validation error of a bad field or operator, without touching the database. */
    check(descriptor: ObjectDescriptor, organisationId: string, query: ObjectQuery): void {
      objectQuery(db, descriptor, organisationId, query);
    },

    async count(descriptor: ObjectDescriptor, organisationId: string, query: ObjectQuery): Promise<number> {
      const { base } = objectQuery(db, descriptor, organisationId, query);
      return Number((await base.count<{ n: string }[]>({ n: '*' }))[0]?.n ?? 0);
    },

    /** One page in the query's order, ties broken by id, with the total of the whole query. */
    async page(descriptor: ObjectDescriptor, organisationId: string, query: ObjectQuery, page: { page: number; limit: number }): Promise<{ rows: Row[]; total: number }> {
      const { base, order } = objectQuery(db, descriptor, organisationId, query);
      const [rows, counted] = await Promise.all([
        base.clone().select('*').orderBy([...order, { column: descriptor.fields.id!.column, order: 'asc' }]).limit(page.limit).offset((page.page - 1) * page.limit),
        base.clone().count<{ n: string }[]>({ n: '*' }),
      ]);
      return { rows, total: Number(counted[0]?.n ?? 0) };
    },

    /** Keyset pagination in id order: the next `limit` rows after `lastId`. */
    async after(descriptor: ObjectDescriptor, organisationId: string, query: ObjectQuery, lastId: string, limit: number): Promise<Row[]> {
      const idColumn = descriptor.fields.id!.column;
      const { base } = objectQuery(db, descriptor, organisationId, query);
      return base.where(idColumn, '>', lastId).orderBy(idColumn).limit(limit).select('*');
    },
  };
}

export type ObjectRepository = ReturnType<typeof createObjectRepository>;
