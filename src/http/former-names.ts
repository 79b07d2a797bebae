import { z } from 'zod';

/**
 * Fields renamed to the API's one naming style keep their former names for a deprecation period: requests
 * may still give them, responses still carry them, and the OpenAPI document marks them `deprecated`.
 * A rename is written `{ former: current }`.
 */
export type Renames = Readonly<Record<string, string>>;

const formerNote = (current: string) => `Deprecated former name of ${current}, with the same meaning; accepted and sent until it is removed`;

/**
 * A request object that also takes the former names of its renamed fields. Each former name is a declared
 * property (the router refuses undeclared ones), checked as the current field is and marked deprecated;
 * giving both names with different values is refused at the former name's path; the handler sees the
 * current name only. Renamed fields must be optional, since either name may carry the value.
 */
export function acceptingFormerNames<T extends z.ZodObject>(schema: T, renames: Renames): z.ZodType<z.output<T>, z.input<T>> {
  const shape = schema.shape as Record<string, z.ZodType>;
  const formers = Object.fromEntries(Object.entries(renames).map(([former, current]) => [former, shape[current]!.optional().meta({ deprecated: true, description: formerNote(current) })]));
  return schema
    .extend(formers)
    .superRefine((value, ctx) => {
      const record = value as Record<string, unknown>;
      for (const [former, current] of Object.entries(renames)) {
        if (record[former] !== undefined && record[current] !== undefined && JSON.stringify(record[former]) !== JSON.stringify(record[current])) {
          ctx.addIssue({ code: 'custom', path: [former], message: `conflicts with ${current}, its current name: give one of them, or the same value in both` });
        }
      }
    })
    .transform((value) => {
      const record: Record<string, unknown> = { ...value };
      for (const [former, current] of Object.entries(renames)) {
        if (record[current] === undefined && record[former] !== undefined) record[current] = record[former];
        delete record[former];
      }
      return record as z.output<T>;
    }) as unknown as z.ZodType<z.output<T>, z.input<T>>;
}

/** A response object that also carries the former names of its renamed fields, marked deprecated. */
export function withFormerNames<T extends z.ZodObject, R extends Readonly<Record<string, keyof T['shape'] & string>>>(schema: T, renames: R) {
  const shape = schema.shape as Record<string, z.ZodType>;
  const formers = Object.fromEntries(Object.entries(renames).map(([former, current]) => [former, shape[current]!.meta({ deprecated: true, description: formerNote(current) })]));
  return schema.extend(formers) as unknown as z.ZodObject<T['shape'] & { [K in keyof R]: T['shape'][R[K]] }>;
}

/** The answer with each renamed field also sent under its former name. */
export function sendingFormerNames<V extends object, R extends Readonly<Record<string, keyof V & string>>>(value: V, renames: R): V & { [K in keyof R]: V[R[K]] } {
  const record = { ...value } as Record<string, unknown>;
  for (const [former, current] of Object.entries(renames)) record[former] = record[current];
  return record as V & { [K in keyof R]: V[R[K]] };
}
