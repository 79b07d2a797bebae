import { z } from 'zod';
import { AppError } from '../../domain/errors';
import { reference } from '../../http/schemas';
import type { WindowSize } from '../usage';

/** Most rows a page of a usage query holds. */
export const MAX_QUERY_ROWS = 1000;
/** Most dimensions a meter has, and filters. */
export const MAX_DIMENSIONS = 5;
export const MAX_FILTERS = 20;
/** Most values an `in` or `not_in` filter, or a query's filter on a dimension, lists. */
export const MAX_FILTER_VALUES = 100;
/** The name a usage query splits by customer with: no dimension may take it. */
export const CUSTOMER_GROUP = 'customer';

/**
 * A metadata key: segments of letters, digits, `_` and `-`, joined by dots into a path into nested
 * objects (`request.region`), at most 100 characters.
 */
export const metadataKey = z
  .string()
  .min(1, 'must not be empty')
  .max(100)
  .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'must be segments of letters, digits, _ and -, joined by dots')
  .describe('a metadata key, or a dotted path into nested metadata objects');

const noDuplicates = (values: readonly string[]) => new Set(values).size === values.length;

export const groupBySchema = z
  .array(metadataKey.refine((key) => key !== CUSTOMER_GROUP, `"${CUSTOMER_GROUP}" is reserved for splitting a query by customer`))
  .max(MAX_DIMENSIONS)
  .refine(noDuplicates, 'must not repeat a key')
  .describe('metadata keys the usage can be split by in a query');

/** A metadata value, compared as text with the event's: kept as written, spaces included, as events keep theirs. */
export const dimensionValueText = reference(255).describe('kept as written, spaces included: compared as text with the value the events carry');

const filterValue = dimensionValueText;

export const filterSchema = z.discriminatedUnion('operator', [
  z.object({ key: metadataKey, operator: z.enum(['in', 'not_in']), values: z.array(filterValue).min(1).max(MAX_FILTER_VALUES) }),
  z.object({ key: metadataKey, operator: z.enum(['exists', 'not_exists']) }),
]);

export const filtersSchema = z
  .array(filterSchema)
  .max(MAX_FILTERS)
  .describe('conditions on metadata an event must meet, all of them, to count for the meter; a value is compared as text');

/** The longest span a query may cover, per window size, in days. */
export const MAX_SPAN_DAYS: Record<WindowSize, number> = { hour: 31, day: 366, month: 3660 };

const DAY_MS = 86_400_000;

/** Refuses a span longer than the window size allows. */
export function checkSpan(from: string, to: string, windowSize: WindowSize): void {
  if (Date.parse(to) - Date.parse(from) > MAX_SPAN_DAYS[windowSize] * DAY_MS) {
    throw AppError.validation(`to - from must be at most ${MAX_SPAN_DAYS[windowSize]} days for ${windowSize} windows`, 'query.to');
  }
}

/** Splits repeated and comma-separated values into one list, empty parts dropped. */
export function listOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).flatMap((part) => part.split(',')).map((part) => part.trim()).filter((part) => part !== '');
}

/**
 * The values one filter parameter lists, comma-separated. A value in double quotes is taken as written,
 * commas and spaces included, with `""` for a quote inside it (`"Acme, Inc",eu`); an unquoted one is
 * trimmed, and empty ones are dropped. A quote left open, or text after a closing quote, is refused.
 */
export function filterValuesOf(text: string, path: string): string[] {
  const values: string[] = [];
  let index = 0;
  while (index <= text.length) {
    let start = index;
    while (text[start] === ' ') start += 1;
    if (text[start] !== '"') {
      const comma = text.indexOf(',', start);
      const end = comma === -1 ? text.length : comma;
      const value = text.slice(start, end).trim();
      if (value !== '') values.push(value);
      index = end + 1;
      continue;
    }
    let value = '';
    let at = start + 1;
    for (;;) {
      const quote = text.indexOf('"', at);
      if (quote === -1) throw AppError.validation('a value in double quotes must end with one ("Acme, Inc")', path);
      value += text.slice(at, quote);
      at = quote + 1;
      if (text[at] !== '"') break;
      value += '"';
      at += 1;
    }
    while (text[at] === ' ') at += 1;
    if (at < text.length && text[at] !== ',') throw AppError.validation('a value in double quotes must be followed by a comma or the end', path);
    values.push(value);
    index = at + 1;
  }
  return values;
}

/** The query's group: each name a dimension of the meter or `customer`, none twice. */
export function groupsOf(asked: string | string[] | undefined, dimensions: readonly string[]): string[] {
  const names = listOf(asked);
  for (const name of names) {
    if (name !== CUSTOMER_GROUP && !dimensions.includes(name)) {
      throw AppError.validation(`groupBy: "${name.slice(0, 100)}" is not a dimension of the meter (${[...dimensions, CUSTOMER_GROUP].join(', ')})`, 'query.groupBy');
    }
  }
  if (!noDuplicates(names)) throw AppError.validation('groupBy must not repeat a dimension', 'query.groupBy');
  return names;
}

/**
 * The `filter.<dimension>` (or `filter[<dimension>]`) parameters of a query string, each a list of
 * values: the query schema cannot name them, as their names depend on the meter.
 */
export function meterQueryParams(query: unknown): Record<string, string[]> {
  const filters: Record<string, string[]> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    // A filter names its dimension: a bare one would narrow nothing while it seems to.
    if (name === 'filter') throw AppError.validation('must name a dimension: filter[model]=a,b or filter.model=a,b', 'query.filter');
    if (!name.startsWith('filter.') && !name.startsWith('filter[')) continue;
    // One dimension, in one pair of brackets or after one dot (a dotted path such as filter.a.b names a.b).
    const dimension = /^filter\.([^[\]]+)$/.exec(name)?.[1] ?? /^filter\[([^[\]]+)\]$/.exec(name)?.[1];
    if (dimension === undefined) throw AppError.validation('must name one dimension: filter[model]=a,b or filter.model=a,b', 'query.filter');
    const path = `query.filter.${dimension.slice(0, 100)}`;
    const parts = typeof value === 'string' ? [value] : Array.isArray(value) && value.every((part) => typeof part === 'string') ? (value as string[]) : null;
    const values = parts?.flatMap((part) => filterValuesOf(part, path)) ?? null;
    if (values === null || values.length === 0) throw AppError.validation('must list values, comma-separated', path);
    filters[dimension] = [...(filters[dimension] ?? []), ...values];
  }
  return filters;
}

/** Checks the query's filters against the meter's dimensions and the values' bounds. */
export function checkQueryFilters(filters: Record<string, string[]>, dimensions: readonly string[]): void {
  for (const [dimension, values] of Object.entries(filters)) {
    const path = `query.filter.${dimension.slice(0, 100)}`;
    if (!dimensions.includes(dimension)) throw AppError.validation(`"${dimension.slice(0, 100)}" is not a dimension of the meter`, path);
    if (values.length > MAX_FILTER_VALUES) throw AppError.validation(`must list at most ${MAX_FILTER_VALUES} values`, path);
    if (values.some((value) => value.length > 255)) throw AppError.validation('each value must be at most 255 characters', path);
  }
}
