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

const couldFind = new WeakMap<z.ZodType, boolean>();

/**
 * Whether `schema` can find an unknown property in any value at all: an object can, and so can what holds
 * one (an array of objects, a record of them, a union); a string, a number or `unknown` never can. Asked once
 * per schema and kept, so that checking a value skips the parts of it that hold nothing to find (the
 * hundreds of events of a usage batch each have a free-form `metadata`).
 */
function canFindUnknown(schema: z.ZodType): boolean {
  const known = couldFind.get(schema);
  if (known !== undefined) return known;
  const def = defOf(schema);
  let found: boolean;
  if (WRAPPERS.has(def.type)) found = def.innerType ? canFindUnknown(def.innerType) : false;
  else {
    switch (def.type) {
      case 'object':
      case 'union':
      case 'intersection':
      case 'lazy':
        found = true;
        break;
      case 'array':
        found = def.element ? canFindUnknown(def.element) : false;
        break;
      case 'tuple':
        found = (def.items ?? []).some(canFindUnknown) || (def.rest ? canFindUnknown(def.rest) : false);
        break;
      case 'record':
        found = def.valueType ? canFindUnknown(def.valueType) : false;
        break;
      case 'pipe':
        found = defOf(def.in!).type === 'transform' ? false : canFindUnknown(def.in!);
        break;
      default:
        found = false;
    }
  }
  couldFind.set(schema, found);
  return found;
}

/**
 * Whether `schema` can take an array: an array, or a union, pipe or wrapper with one inside. A query
 * parameter whose schema cannot was sent more than once when it arrives as one (`limit=5&limit=6`).
 */
export function takesArray(schema: z.ZodType): boolean {
  const def = defOf(schema);
  if (WRAPPERS.has(def.type)) return def.innerType ? takesArray(def.innerType) : false;
  switch (def.type) {
    case 'array':
    case 'tuple':
    case 'unknown':
    case 'any':
      return true;
    case 'union':
      return (def.options ?? []).some(takesArray);
    case 'intersection':
      return takesArray(def.left!) && takesArray(def.right!);
    case 'pipe':
      // z.preprocess (a transform first) may turn an array into anything: only its output tells.
      return defOf(def.in!).type === 'transform' ? takesArray(def.out!) : takesArray(def.in!);
    case 'lazy':
      return def.getter ? takesArray(def.getter()) : false;
    default:
      return false;
  }
}

/** The schema of the property `key` of an object schema (through its wrappers), if it names one. */
export function propertySchema(schema: z.ZodType, key: string): z.ZodType | undefined {
  const def = defOf(unwrapped(schema));
  if (def.type === 'pipe') return propertySchema(defOf(def.in!).type === 'transform' ? def.out! : def.in!, key);
  return def.type === 'object' && def.shape && Object.hasOwn(def.shape, key) ? def.shape[key] : undefined;
}

/**
 * The paths of the properties of `value` that `schema` does not name: the keys a `z.object` would
 * silently drop (or a strict one refuse). An object that takes any key (a record, a loose object, a catchall) has none; inside a
 * union, the first option that takes the value decides, and when none does, a key no object option names
 * is unknown.
 */
export function unknownProperties(schema: z.ZodType, value: unknown, path: string[] = []): string[][] {
  if (!canFindUnknown(schema)) return [];
  const def = defOf(schema);
  if (WRAPPERS.has(def.type)) return def.innerType ? unknownProperties(def.innerType, value, path) : [];
  switch (def.type) {
    case 'object': {
      if (!isObject(value)) return [];
      const shape = def.shape ?? {};
      const found: string[][] = [];
      for (const key of Object.keys(value)) {
        const property = Object.hasOwn(shape, key) ? shape[key] : def.catchall;
        if (!property || defOf(property).type === 'never') found.push([...path, key]);
        else if (canFindUnknown(property)) found.push(...unknownProperties(property, value[key], [...path, key]));
      }
      return found;
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
