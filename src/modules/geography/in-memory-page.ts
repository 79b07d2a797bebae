import type { Page, PageQuery } from '../../http/paging';

/**
 * Pages reference data held in memory (countries, subdivisions, currencies) with the same parameters
 * and search semantics as `paginate`: a case-insensitive substring of any of the given fields.
 */
export function pageInMemory<T>(items: readonly T[], paging: PageQuery, searchFields: ReadonlyArray<(item: T) => string>): Page<T> {
  const { page, limit, search } = paging;
  const needle = search?.toLowerCase();
  const matching = needle ? items.filter((item) => searchFields.some((field) => field(item).toLowerCase().includes(needle))) : items;
  return {
    items: matching.slice((page - 1) * limit, page * limit),
    page,
    limit,
    total: matching.length,
  };
}
