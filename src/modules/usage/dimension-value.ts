import { createHash } from 'node:crypto';
import { DIGEST_PREFIX, DIMENSION_VALUE_MAX_BYTES, keptAsText } from '../../domain/dimension-value';

/** A dimension value as groups and rollups hold it (see src/domain/dimension-value.ts): the text, or its digest. */
export function dimensionValue(text: string): string {
  return keptAsText(text) ? text : `${DIGEST_PREFIX}${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/** `dimensionValue` of an SQL text expression (repeated in the result: pass a column or a cheap extraction). */
export function dimensionValueSql(expression: string): string {
  return `(CASE WHEN octet_length(${expression}) > ${DIMENSION_VALUE_MAX_BYTES} THEN '${DIGEST_PREFIX}' || encode(sha256(convert_to(${expression}, 'UTF8')), 'hex') ELSE ${expression} END)`;
}
