import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';

// NUMERIC and BIGINT come back as strings so money never passes through a binary float.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export const MIGRATIONS_DIRECTORY = path.resolve(__dirname, '../../migrations');

export function createDb(connectionString: string, poolMax = 10): Knex {
  return knex({
    client: 'pg',
    connection: connectionString,
    pool: { min: 0, max: poolMax },
    migrations: {
      directory: MIGRATIONS_DIRECTORY,
      extension: 'ts',
      loadExtensions: ['.ts'],
      tableName: 'knex_migrations',
    },
  });
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}

/** Postgres unique-violation, for turning a race into a 409 instead of a 500. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as { code?: string; constraint?: string };
  return pgError.code === '23505' && (constraint === undefined || pgError.constraint === constraint);
}
