import { isDatabaseUnavailable } from '../../src/db/errors';
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

it('when a process stops inside a transaction without closing its connection, then Postgres ends the transaction after three minutes idle, its locks with it, and the pool goes on with a fresh connection', async () => {
  // Workers' pools and the API's alike.
  const api = createDb(process.env.DATABASE_URL!, 1, undefined, { queryTimeoutMs: 30_000 });
  const worker = createDb(process.env.DATABASE_URL!, 1);
  try {
    for (const pool of [api, worker]) {
      expect((await pool.raw<{ rows: Array<{ idle_in_transaction_session_timeout: string }> }>('SHOW idle_in_transaction_session_timeout')).rows[0]).toEqual({ idle_in_transaction_session_timeout: '3min' });
      // The same end, sooner: the transaction idles past its limit, its next statement fails, and the
      // connection Postgres closed leaves the pool.
      const first = (await pool.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const failure = await pool
        .transaction(async (trx) => {
          await trx.raw("SET LOCAL idle_in_transaction_session_timeout = '300ms'");
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          await trx.raw('SELECT 1');
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failure).toBeInstanceOf(Error);
      const next = (await pool.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      expect(next).not.toBe(first);
    }
  } finally {
    await api.destroy();
    await worker.destroy();
  }
});

it("when a statement runs past the API's query timeout, then Postgres cancels it, as Postgres unavailable (a 503), and the connection serves the next statement", async () => {
  const api = createDb(process.env.DATABASE_URL!, 1, undefined, { queryTimeoutMs: 1_000 });
  try {
    const started = Date.now();
    const failure = await api.raw('SELECT pg_sleep(5)').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect({ code: (failure as { code?: string }).code, unavailable: isDatabaseUnavailable(failure), withinTwoSeconds: Date.now() - started < 2_000 }).toEqual({ code: '57014', unavailable: true, withinTwoSeconds: true });
    expect((await api.raw<{ rows: Array<{ one: number }> }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  } finally {
    await api.destroy();
  }
});

it('when a statement gets no answer at all within the client\'s timeout (a frozen Postgres), then it fails as Postgres unavailable and its connection leaves the pool: the next statement gets a fresh one', async () => {
  const api = createDb(process.env.DATABASE_URL!, 1, undefined, { queryTimeoutMs: 1_000 });
  try {
    const first = (await api.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    // The server's own timeout lifted for this statement, as a frozen server would never apply it.
    const failure = await api
      .transaction(async (trx) => {
        await trx.raw('SET LOCAL statement_timeout = 0');
        await trx.raw('SELECT pg_sleep(6)');
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect({ message: (failure as Error).message, unavailable: isDatabaseUnavailable(failure) }).toEqual({ message: expect.stringContaining('Query read timeout'), unavailable: true });
    const next = (await api.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    expect(next).not.toBe(first);
  } finally {
    await api.destroy();
  }
});

it("when a connection cannot be made within the connection timeout, then pg's own words for it are Postgres unavailable", () => {
  expect(isDatabaseUnavailable(new Error('timeout expired'))).toBe(true);
  expect(isDatabaseUnavailable(new Error('Query read timeout'))).toBe(true);
  expect(isDatabaseUnavailable(new Error('relation "x" does not exist'))).toBe(false);
});
