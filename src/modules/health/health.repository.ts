import type { Knex } from 'knex';

/** Whether Postgres answers a trivial query. */
export async function pingPostgres(db: Knex): Promise<boolean> {
  return (await db.raw('select 1')) !== undefined;
}
