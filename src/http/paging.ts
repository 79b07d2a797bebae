import type { Knex } from 'knex';
import { z } from 'zod';
import { queryInteger } from './schemas';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** Every list takes the same three parameters. */
export const pageQuery = z.object({
  page: queryInteger(1).default(1),
  limit: queryInteger(1, MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  search: z.string().trim().max(200).optional(),
});

export type PageQuery = z.output<typeof pageQuery>;

export interface Page<T> {
  items: T[];
  page: number;
  limit: number;
  total: number;
}

export function pageOf<S extends z.ZodType>(item: S) {
  return z.object({ items: z.array(item), page: z.number(), limit: z.number(), total: z.number() });
}

/**
 * Pages a query that is already scoped to the caller's organisation. `search` matches any of the given
 * columns case-insensitively; rows come in a stable order so pages never overlap.
 */
export async function paginate<Row extends object, T>(
  query: Knex.QueryBuilder,
  paging: PageQuery,
  options: { searchColumns: string[]; orderBy?: Array<{ column: string; order: 'asc' | 'desc' }>; map: (row: Row) => T },
): Promise<Page<T>> {
  const { page, limit, search } = paging;
  if (search && options.searchColumns.length > 0) {
    const pattern = `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query.where((builder) => {
      for (const column of options.searchColumns) builder.orWhereILike(column, pattern);
    });
  }
  const counted = query.clone().clearSelect().clearOrder().count<{ count: string }[]>({ count: '*' });
  const orderBy = options.orderBy ?? [
    { column: 'created_at', order: 'desc' },
    { column: 'id', order: 'desc' },
  ];
  const [rows, countRows] = await Promise.all([
    query.orderBy(orderBy).limit(limit).offset((page - 1) * limit),
    counted,
  ]);
  return {
    items: (rows as Row[]).map(options.map),
    page,
    limit,
    total: Number(countRows[0]?.count ?? 0),
  };
}
