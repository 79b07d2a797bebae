import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createUsageActivities } from './usage.activities';

export interface ActivityDeps {
  db: Knex;
  logger: Logger;
}

/** Every activity the worker registers, built from its dependencies; workflows proxy these types. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createUsageActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
