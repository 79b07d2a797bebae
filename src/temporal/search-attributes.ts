import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

export { SEARCH_ATTRIBUTES };

/** Registers whatever is missing; safe to call at every worker start. */
export async function ensureSearchAttributes(connection: Pick<Connection, 'operatorService'>, namespace: string): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((key) => !known.has(key.name));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
}
