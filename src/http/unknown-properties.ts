import type { z } from 'zod';

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  innerType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  left?: z.ZodType;
  right?: z.ZodType;
  valueType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  items?: z.ZodType[];
  rest?: z.ZodType | null;
  getter?: () => z.ZodType;
}

/** What the error item of an unknown property says, its path naming it. */
export const UNKNOWN_PROPERTY = 'is not a property this request takes';

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Wrappers that check their inner schema against the same value. */
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional', 'success']);

function unwrapped(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  return WRAPPERS.has(def.type) && def.innerType ? unwrapped(def.innerType) : schema;
}

/** The unknown properties that every one of `schemas` finds. */
function unknownToAll(schemas: z.ZodType[], value: unknown, path: string[]): string[][] {
  const [first, ...others] = schemas.map((schema) => unknownProperties(schema, value, path));
  if (!first) return [];
  const inOthers = others.map((found) => new Set(found.map((one) => one.join('.'))));
  return first.filter((one) => inOthers.every((set) => set.has(one.join('.'))));
}

/**
 * The paths of the properties of `value` that `schema` does not name: the keys a `z.object` would
 * silently drop (or a strict one refuse). An object that takes any key (a record, a loose object, a catchall) has none; inside a
 * union, the first option that takes the value decides, and when none does, a key no object option names
 * is unknown.
 */
export function unknownProperties(schema: z.ZodType, value: unknown, path: string[] = []): string[][] {
  const def = defOf(schema);
  if (WRAPPERS.has(def.type)) return def.innerType ? unknownProperties(def.innerType, value, path) : [];
  switch (def.type) {
    case 'object': {
      if (!isObject(value)) return [];
      const shape = def.shape ?? {};
      return Object.entries(value).flatMap(([key, inner]) => {
        const property = Object.hasOwn(shape, key) ? shape[key] : def.catchall;
        if (!property || defOf(property).type === 'never') return [[...path, key]];
        return unknownProperties(property, inner, [...path, key]);
      });
    }
    case 'array':
      return Array.isArray(value) && def.element ? value.flatMap((item, i) => unknownProperties(def.element!, item, [...path, String(i)])) : [];
    case 'tuple':
      return Array.isArray(value)
        ? value.flatMap((item, i) => {
            const itemSchema = def.items?.[i] ?? def.rest;
            return itemSchema ? unknownProperties(itemSchema, item, [...path, String(i)]) : [];
          })
        : [];
    case 'record':
      return isObject(value) && def.valueType ? Object.entries(value).flatMap(([key, inner]) => unknownProperties(def.valueType!, inner, [...path, key])) : [];
    case 'union': {
      const option = def.options?.find((candidate) => candidate.safeParse(value).success);
      if (option) return unknownProperties(option, value, path);
      // None takes the value (its discriminator is wrong, say): what no object option names is unknown still.
      return unknownToAll((def.options ?? []).filter((candidate) => defOf(unwrapped(candidate)).type === 'object'), value, path);
    }
    case 'intersection':
      return unknownToAll([def.left!, def.right!], value, path);
    case 'pipe': {
      // z.preprocess: the value reaches `out` only once transformed, so there is nothing to tell before.
      const first = def.in!;
      return defOf(first).type === 'transform' ? [] : unknownProperties(first, value, path);
    }
    case 'lazy':
      return def.getter ? unknownProperties(def.getter(), value, path) : [];
    default:
      return [];
  }
}
