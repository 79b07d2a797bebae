import type { z } from 'zod';
import { zodProblems, type Problem } from './error-handler';
import { UNKNOWN_PROPERTY, unknownProperties } from './unknown-properties';

export type Checked<S extends z.ZodType> = { ok: true; data: z.output<S> } | { ok: false; problems: Problem[] };

/**
 * The one check of a value against its schema, for a request part and for each event of a usage batch
 * alike: the schema's issues (a missing property "is required"), and, for a closed value, each property
 * the schema does not name, by its path, rather than dropped unseen.
 */
export function check<S extends z.ZodType>(schema: S, value: unknown, options: { closed: boolean }): Checked<S> {
  const result = schema.safeParse(value);
  const unknown = options.closed ? unknownProperties(schema, value).map((path) => ({ path, message: UNKNOWN_PROPERTY })) : [];
  if (result.success && unknown.length === 0) return { ok: true, data: result.data };
  // A strict object's unknown keys are found by both.
  const problems = [...(result.success ? [] : zodProblems(result.error, value)), ...unknown];
  const key = (problem: Problem) => `${problem.path.join('.')}\u0000${problem.message}`;
  return { ok: false, problems: problems.filter((problem, i) => problems.findIndex((other) => key(other) === key(problem)) === i) };
}
