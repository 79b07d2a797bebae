import fs from 'node:fs';
import { Client as PgClient } from 'pg';

function kill(pid: string | undefined): void {
  if (!pid) return;
  try {
    process.kill(Number(pid), 'SIGTERM');
  } catch {
    // already gone
  }
}

async function waitGone(pid: string | undefined, timeoutMs: number): Promise<void> {
  if (!pid) return;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(Number(pid), 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  try {
    process.kill(Number(pid), 'SIGKILL');
  } catch {
    // already gone
  }
}

export default async function globalTeardown(): Promise<void> {
  const { TEST_WORKER_PID, TEST_TEMPORAL_PID, TEST_DATABASE_ADMIN_URL, TEST_DATABASE_NAME, TEST_WORK_DIR } = process.env;
  await (globalThis as { testSmtp?: { close: () => Promise<void> } }).testSmtp?.close();
  await (globalThis as { testStripe?: { close: () => Promise<void> } }).testStripe?.close();
  kill(TEST_WORKER_PID);
  await waitGone(TEST_WORKER_PID, 15_000);
  kill(TEST_TEMPORAL_PID);
  await waitGone(TEST_TEMPORAL_PID, 15_000);
  if (TEST_DATABASE_ADMIN_URL && TEST_DATABASE_NAME) {
    const admin = new PgClient({ connectionString: TEST_DATABASE_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${TEST_DATABASE_NAME} WITH (FORCE)`);
    // And those of breakable stacks (support/breakable-stack.ts) that a failed test left behind.
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`${TEST_DATABASE_NAME}_`]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    await admin.end();
  }
  if (TEST_WORK_DIR) fs.rmSync(TEST_WORK_DIR, { recursive: true, force: true });
}
