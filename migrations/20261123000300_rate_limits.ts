import type { Knex } from 'knex';

/**
 * Rate-limit counters shared by every API process (RATE_LIMIT_STORE=postgres): one row per limiter and key,
 * holding the hits of the current fixed window.
 *
 * UNLOGGED: a counter is worth no WAL. The table is emptied after a crash and is not copied to standbys,
 * which costs at most one window of counting. A fillfactor below 100 leaves room on each page, so a hit
 * (which changes no indexed column while its window lasts) is a HOT update.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE UNLOGGED TABLE rate_limits (
      limiter text NOT NULL,
      key text NOT NULL,
      hits integer NOT NULL,
      resets_at timestamptz NOT NULL,
      PRIMARY KEY (limiter, key)
    ) WITH (fillfactor = 70)
  `);
  // The purge of windows that have passed.
  await knex.raw('CREATE INDEX rate_limits_resets_at ON rate_limits (resets_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_limits');
}
