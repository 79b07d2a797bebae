import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Connection } from '@temporalio/client';

/** Operators find workflows in the Temporal UI by these. */
export const OrganisationIdKey = defineSearchAttributeKey('OrganisationId', SearchAttributeType.KEYWORD);
export const CustomerIdKey = defineSearchAttributeKey('CustomerId', SearchAttributeType.KEYWORD);
export const InvoiceNumberKey = defineSearchAttributeKey('InvoiceNumber', SearchAttributeType.KEYWORD);
export const ContractIdKey = defineSearchAttributeKey('ContractId', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [OrganisationIdKey, CustomerIdKey, InvoiceNumberKey, ContractIdKey];

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
