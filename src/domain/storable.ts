import { Decimal } from 'decimal.js';

/**
 * What a Postgres column can hold, checked before a value reaches SQL: a value the column would refuse
 * must be refused with its reason, and one it would silently round must not be stored as something else.
 * Each check returns the problem in words, or undefined when the value fits.
 */

/** NUMERIC(precision, scale): at most `precision - scale` integer digits and `scale` decimal places. */
export function numericProblem(value: string | number, precision: number, scale: number): string | undefined {
  let decimal: Decimal;
  try {
    decimal = new Decimal(value);
  } catch {
    return 'must be a number';
  }
  if (!decimal.isFinite()) return 'must be a finite number';
  if (decimal.decimalPlaces() > scale) return `must have at most ${scale} decimal places`;
  const integerDigits = decimal.abs().trunc().isZero() ? 0 : decimal.abs().trunc().toFixed().length;
  if (integerDigits > precision - scale) return `must have at most ${precision - scale} digits before the decimal point`;
  return undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text Postgres can store: no NUL character, and no half of a surrogate pair without the other half. */
export function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain a NUL character';
  if (LONE_SURROGATE.test(value)) return 'must be valid Unicode (an unpaired surrogate was found)';
  return undefined;
}

/**
 * How deep arrays may nest directly in one another in JSON the API stores (`[[1]]` is 2 deep; an object
 * between two arrays starts the count again). Deeper is refused: nothing a billing system keeps needs it
 * (GeoJSON's deepest coordinates are 4), and the OpenAPI document spells each level out.
 */
export const MAX_ARRAY_NESTING = 8;

const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');
const escaped = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * A key as a path names it: each character Postgres cannot store written as its escape (`\u0000`), so that
 * a message naming the key can itself be stored (a usage batch keeps its failed records in Postgres).
 */
export function printableKey(key: string): string {
  return key.replaceAll('\u0000', escaped).replace(LONE_SURROGATES, escaped);
}

/**
 * Where in a JSON value the first part Postgres cannot store or the API refuses to is (`[]` for the value
 * itself), and why: text with a NUL character or an unpaired surrogate, or arrays nested directly in one
 * another more than `MAX_ARRAY_NESTING` deep. The path's keys are printable (see `printableKey`).
 */
export function storableJsonProblem(value: unknown, path: string[] = [], arrayNesting = 0): { path: string[]; problem: string } | undefined {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem ? { path, problem } : undefined;
  }
  const nesting = Array.isArray(value) ? arrayNesting + 1 : 0;
  if (nesting > MAX_ARRAY_NESTING) return { path, problem: `must not nest arrays directly in arrays more than ${MAX_ARRAY_NESTING} deep` };
  const entries: Array<[string, unknown]> = Array.isArray(value)
    ? value.map((inner, index) => [String(index), inner])
    : typeof value === 'object' && value !== null
      ? Object.entries(value)
      : [];
  for (const [key, inner] of entries) {
    const keyProblem = textProblem(key);
    if (keyProblem) return { path: [...path, printableKey(key)], problem: `has a key that ${keyProblem}` };
    const found = storableJsonProblem(inner, [...path, key], nesting);
    if (found) return found;
  }
  return undefined;
}

/** JSON for a jsonb column: every key and string inside storable text, arrays nested at most 8 deep. */
export function jsonProblem(value: unknown): string | undefined {
  return storableJsonProblem(value)?.problem;
}

const FIRST_YEAR = 1;
const LAST_YEAR = 9999;

/** An instant in years 1 to 9999 (UTC): what every part of the stack, Postgres included, reads back alike. */
export function instantProblem(date: Date): string | undefined {
  const year = date.getUTCFullYear();
  return Number.isNaN(date.getTime()) || year < FIRST_YEAR || year > LAST_YEAR ? `must fall in the years ${FIRST_YEAR} to ${LAST_YEAR} (UTC)` : undefined;
}
