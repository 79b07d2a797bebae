import { createDb } from '../../src/db/knex';

/**
 * What every connection of the service's pools is set to before its first statement, checked on the
 * suite's Postgres (which compiles statements with JIT by default).
 */
const db = createDb(process.env.DATABASE_URL!, 2);
afterAll(() => db.destroy());

it('when a pool opens connections, then each runs without JIT compilation, so that a statement the planner overestimates is never compiled longer than it runs', async () => {
  const server = await db.raw<{ rows: Array<{ jit: string }> }>("SELECT boot_val AS jit FROM pg_settings WHERE name = 'jit'");
  expect(server.rows[0]?.jit).toBe('on');
  // Two connections at once: one held by a transaction, the other asked beside it.
  await db.transaction(async (trx) => {
    const held = await trx.raw<{ rows: Array<{ jit: string }> }>('SHOW jit');
    const beside = await db.raw<{ rows: Array<{ jit: string; pid: number }> }>('SELECT current_setting($$jit$$) AS jit, pg_backend_pid() AS pid');
    const heldPid = await trx.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid');
    expect(beside.rows[0]?.pid).not.toBe(heldPid.rows[0]?.pid);
    expect([held.rows[0]?.jit, beside.rows[0]?.jit]).toEqual(['off', 'off']);
  });
});
