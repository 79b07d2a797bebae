import { ISO_DATE, isIsoInstant } from './iso-dates';

/**
 * The objects API's query language: filters and sorts over a whitelist of fields, never raw SQL. This
 * file checks a query against an object's fields and returns it in a form the SQL builder binds as
 * parameters; what it does not know, it refuses.
 */

/** A query of the objects API as a caller sends it: filters and sort keys by field name. */
export interface ObjectQuery {
  filter?: Array<{ field: string; op: string; value?: unknown }>;
  sort?: Array<{ field: string; direction?: 'asc' | 'desc' }>;
}

export type FieldType = 'string' | 'number' | 'decimal' | 'boolean' | 'datetime' | 'date';

export const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'isNull'] as const;
export type Operator = (typeof OPERATORS)[number];

export interface FieldSpec {
  column: string;
  type: FieldType;
}

export interface Condition {
  column: string;
  op: Operator;
  value: unknown;
}

export interface QueryProblem {
  path: string;
  message: string;
}

const ORDERED: readonly FieldType[] = ['number', 'decimal', 'datetime', 'date', 'string'];

/** Digits a number given as text may have, at most: far past any column's, well short of what Postgres refuses. */
const MAX_NUMBER_TEXT = 100;

/**
 * Whether a value fits the field, checked before it is bound: a value its column cannot hold would
 * otherwise reach Postgres, whose refusal is not the caller's answer.
 */
function valueProblem(type: FieldType, value: unknown): string | undefined {
  switch (type) {
    case 'string':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
    case 'decimal':
      return (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value.length <= MAX_NUMBER_TEXT && /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(value))
        ? undefined
        : `must be a number (as text, at most ${MAX_NUMBER_TEXT} characters)`;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'date':
      return typeof value === 'string' && ISO_DATE.test(value) ? undefined : 'must be a calendar date YYYY-MM-DD in the years 0001 to 9999';
    case 'datetime':
      return typeof value === 'string' && (ISO_DATE.test(value) || isIsoInstant(value))
        ? undefined
        : 'must be an ISO 8601 date-time with a zone (Z or ±hh:mm), or a calendar date YYYY-MM-DD, in the years 0001 to 9999';
  }
}

/** A field of the object by name: only its own, never one inherited from Object (`__proto__`, `constructor`). */
const ownField = (fields: Record<string, FieldSpec>, name: string): FieldSpec | undefined => (Object.hasOwn(fields, name) ? fields[name] : undefined);

export function compileFilter(
  fields: Record<string, FieldSpec>,
  filter: Array<{ field: string; op: string; value?: unknown }>,
): { conditions: Condition[]; problems: QueryProblem[] } {
  const conditions: Condition[] = [];
  const problems: QueryProblem[] = [];
  filter.forEach((item, i) => {
    const path = `body.filter.${i}`;
    const field = ownField(fields, item.field);
    if (!field) return void problems.push({ path: `${path}.field`, message: `unknown field; one of ${Object.keys(fields).join(', ')}` });
    if (!(OPERATORS as readonly string[]).includes(item.op)) return void problems.push({ path: `${path}.op`, message: `one of ${OPERATORS.join(', ')}` });
    const op = item.op as Operator;
    if ((op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte') && !ORDERED.includes(field.type)) {
      return void problems.push({ path: `${path}.op`, message: `${op} does not apply to a ${field.type} field` });
    }
    if (op === 'contains' && field.type !== 'string') return void problems.push({ path: `${path}.op`, message: 'contains applies to text fields' });
    if (op === 'isNull') {
      if (typeof item.value !== 'boolean') return void problems.push({ path: `${path}.value`, message: 'isNull takes true or false' });
    } else if (op === 'in') {
      if (!Array.isArray(item.value) || item.value.length === 0 || item.value.length > 100) {
        return void problems.push({ path: `${path}.value`, message: 'in takes a list of 1 to 100 values' });
      }
      const bad = item.value.map((v) => valueProblem(field.type, v)).find(Boolean);
      if (bad) return void problems.push({ path: `${path}.value`, message: `every value ${bad}` });
    } else {
      const bad = valueProblem(field.type, item.value);
      if (bad) return void problems.push({ path: `${path}.value`, message: bad });
    }
    conditions.push({ column: field.column, op, value: item.value });
  });
  return { conditions, problems };
}

export function compileSort(
  fields: Record<string, FieldSpec>,
  sort: Array<{ field: string; direction?: 'asc' | 'desc' }>,
): { order: Array<{ column: string; order: 'asc' | 'desc' }>; problems: QueryProblem[] } {
  const problems: QueryProblem[] = [];
  const order = sort.flatMap((item, i) => {
    const field = ownField(fields, item.field);
    if (!field) {
      problems.push({ path: `body.sort.${i}.field`, message: 'unknown field' });
      return [];
    }
    return [{ column: field.column, order: item.direction ?? ('asc' as const) }];
  });
  return { order, problems };
}
