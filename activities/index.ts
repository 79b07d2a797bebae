import type { Knex } from 'knex';
import type { Logger } from 'pino';

export interface ActivityDeps {
  db: Knex;
  logger: Logger;
}

/** Every activity the worker registers, built from its dependencies; workflows proxy this type. */
export function createActivities(deps: ActivityDeps) {
  void deps;
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
