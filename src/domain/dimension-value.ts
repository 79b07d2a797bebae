/**
 * A dimension value as meters group by it and rollups key it: the text at the dimension's metadata key, or,
 * when that text is longer than DIMENSION_VALUE_MAX_BYTES of UTF-8, `sha256:` and the hex digest of it. The
 * rollups' key holds up to five values and cannot take text of any length (Postgres caps an index entry at
 * 2,704 bytes); a digest keeps distinct values distinct. The usage module computes it (`dimensionValue`,
 * and `dimensionValueSql` in Postgres); a price's `match` names values of at most that length, or a digest.
 */
export const DIMENSION_VALUE_MAX_BYTES = 400;

/** The prefix of a value kept as its digest. */
export const DIGEST_PREFIX = 'sha256:';

/** Whether a value is kept as its own text (not as its digest). */
export const keptAsText = (text: string): boolean => Buffer.byteLength(text, 'utf8') <= DIMENSION_VALUE_MAX_BYTES;
