import { ISO_DATE } from './iso-dates';
/** Custom attribute definitions and the pure check of values against them. */
export const ATTRIBUTE_TYPES = ['string', 'number', 'boolean', 'date', 'enum'] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

/** The object types that can carry custom attributes. */
export const ATTRIBUTE_OBJECT_TYPES = ['sku', 'customer', 'entity', 'contract', 'invoice'] as const;
export type AttributeObjectType = (typeof ATTRIBUTE_OBJECT_TYPES)[number];

export interface AttributeDefinition {
  key: string;
  type: AttributeType;
  required: boolean;
  allowedValues?: string[] | null;
}

export interface AttributeProblem {
  path: string;
  message: string;
}


function typeProblem(definition: AttributeDefinition, value: unknown): string | undefined {
  switch (definition.type) {
    case 'string':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'date':
      // The calendar's own days only: `Date.parse` rolls 2026-02-30 over to 2 March and takes the year 0000.
      return typeof value === 'string' && ISO_DATE.test(value) ? undefined : 'must be a date, YYYY-MM-DD';
    case 'enum':
      return typeof value === 'string' && (definition.allowedValues ?? []).includes(value)
        ? undefined
        : `must be one of ${(definition.allowedValues ?? []).join(', ')}`;
  }
}

/** Every problem at once: unknown keys, missing required keys, wrong types, values outside the allowed set. */
export function validateAttributes(definitions: AttributeDefinition[], values: Record<string, unknown>, pathPrefix = 'attributes'): AttributeProblem[] {
  const byKey = new Map(definitions.map((definition) => [definition.key, definition]));
  const problems: AttributeProblem[] = [];
  for (const [key, value] of Object.entries(values)) {
    const definition = byKey.get(key);
    if (!definition) {
      problems.push({ path: `${pathPrefix}.${key}`, message: 'is not a defined attribute' });
      continue;
    }
    if (value === null) {
      if (definition.required) problems.push({ path: `${pathPrefix}.${key}`, message: 'is required' });
      continue;
    }
    const problem = typeProblem(definition, value);
    if (problem) problems.push({ path: `${pathPrefix}.${key}`, message: problem });
  }
  for (const definition of definitions) {
    if (definition.required && !Object.hasOwn(values, definition.key)) problems.push({ path: `${pathPrefix}.${definition.key}`, message: 'is required' });
  }
  return problems;
}
