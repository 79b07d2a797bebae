import { Client as PgClient } from 'pg';

/** One statement as the suite's Postgres administrator (CREATE and DROP DATABASE cannot run in a pool's transaction). */
export async function adminQuery(sql: string): Promise<void> {
  const admin = new PgClient({ connectionString: process.env.TEST_DATABASE_ADMIN_URL! });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}
