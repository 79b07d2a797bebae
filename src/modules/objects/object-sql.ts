import type { Knex } from 'knex';
import { compileFilter, compileSort, type ObjectQuery } from '../../domain/object-query';
import { AppError } from '../../domain/errors';
import type { ObjectDescriptor } from './object-registry';

export type { ObjectQuery };

/**
 * The scoped, filtered base query of an object. Columns come from the whitelist only and every value is
 * a bound parameter; the caller's organisation and the soft-delete rule are always applied.
 */
export function objectQuery(db: Knex, descriptor: ObjectDescriptor, organisationId: string, query: ObjectQuery): { base: Knex.QueryBuilder; order: Array<{ column: string; order: 'asc' | 'desc' }> } {
  const filter = compileFilter(descriptor.fields, query.filter ?? []);
  const sort = compileSort(descriptor.fields, query.sort ?? []);
  const problems = [...filter.problems, ...sort.problems];
  if (problems.length) {
    throw AppError.invalid(problems);
  }
  const base = db(descriptor.table).where({ organisation_id: organisationId });
  if (descriptor.softDeleted) base.whereNull('deleted_at');
  for (const { column, op, value } of filter.conditions) {
    switch (op) {
      case 'eq':
        base.where(column, value as string);
        break;
      case 'neq':
        base.where((b) => b.whereNot(column, value as string).orWhereNull(column));
        break;
      case 'gt':
        base.where(column, '>', value as string);
        break;
      case 'gte':
        base.where(column, '>=', value as string);
        break;
      case 'lt':
        base.where(column, '<', value as string);
        break;
      case 'lte':
        base.where(column, '<=', value as string);
        break;
      case 'in':
        base.whereIn(column, value as string[]);
        break;
      case 'contains':
        base.whereILike(column, `%${String(value).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
        break;
      case 'isNull':
        if (value) base.whereNull(column);
        else base.whereNotNull(column);
        break;
    }
  }
  return { base, order: sort.order };
}
