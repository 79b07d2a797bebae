import type { Knex } from 'knex';

/**
 * Dimension values longer than 400 bytes of UTF-8 are now kept in rollups as `sha256:` and the hex digest
 * of their text (src/domain/dimension-value.ts): the rollups' key cannot take text of any length. Rows
 * written before hold such values as they came; they are rewritten to the digest, so that later events of
 * the same value add to the same rows. Only rows holding a long value change (none, on most databases).
 */
const digest = (value: string) => `(CASE WHEN octet_length(${value}) > 400 THEN 'sha256:' || encode(sha256(convert_to(${value}, 'UTF8')), 'hex') ELSE ${value} END)`;
const rewritten = (column: string) => `(SELECT array_agg(${digest('v')} ORDER BY n) FROM unnest(${column}) WITH ORDINALITY AS t(v, n))`;
const holdsLong = (column: string) => `EXISTS (SELECT 1 FROM unnest(${column}) AS v WHERE octet_length(v) > 400)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE meter_rollups SET group_values = ${rewritten('group_values')} WHERE ${holdsLong('group_values')}`);
  await knex.raw(`UPDATE meter_rollup_totals SET group_value = ${rewritten('group_value')} WHERE ${holdsLong('group_value')}`);
}

/** Digests cannot be turned back into their text: the rows keep them. */
export async function down(): Promise<void> {}
