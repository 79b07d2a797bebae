import type { Knex } from 'knex';
import { Client as PgClient } from 'pg';
import { createDb, migrateLatest } from '../../../src/db/knex';

async function asAdmin(adminUrl: string, sql: string): Promise<void> {
  const admin = new PgClient({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(sql);
  await admin.end();
}

/**
 * A database of its own for a test of one migration: migrated to the latest, then back to just before
 * `migration`, so that the test can write the rows the migration finds. `writer` is a second pool on it,
 * for a test that writes while the migration runs. `drop` closes both and removes it.
 */
export async function databaseBefore(migration: string, label: string): Promise<{ db: Knex; writer: Knex; drop: () => Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `billing_${label}_${Date.now()}_${process.pid}`;
  await asAdmin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), 2);
  await migrateLatest(db);
  await db.migrate.down({ name: migration });
  const writer = createDb(url.toString(), 2);
  return {
    db,
    writer,
    drop: async () => {
      await writer.destroy();
      await db.destroy();
      await asAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name}`);
    },
  };
}

/**
 * A test file's database of its own, before `migration` (see `databaseBefore`): made before the file's
 * tests and dropped after them. Its handles are read from the answer once the tests run.
 */
export function useDatabaseBefore(migration: string, label: string): { db: Knex; writer: Knex } {
  const handles = {} as { db: Knex; writer: Knex };
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const made = await databaseBefore(migration, label);
    handles.db = made.db;
    handles.writer = made.writer;
    drop = made.drop;
  });
  afterAll(() => drop?.());
  return handles;
}
