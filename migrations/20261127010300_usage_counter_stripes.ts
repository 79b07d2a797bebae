import type { Knex } from 'knex';

/**
 * A usage counter's day is kept in up to `COUNTER_STRIPES` rows, one per stripe: the chunks a group of
 * batches writes at once each add to a stripe of their own, so that they no longer queue on each other's row
 * locks for the same customers' days (a 1,000-event chunk touches hundreds of counters, and the next chunk
 * mostly the same ones). A day's usage is the sum of its stripes. Existing rows become stripe 0. The
 * primary key is rebuilt with the stripe in it: the table holds a row per counter and day, so this takes as
 * long as building that index, under a lock that waits for running chunks.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE usage_counter_days ADD COLUMN stripe smallint NOT NULL DEFAULT 0');
  await knex.raw('ALTER TABLE usage_counter_days ADD CONSTRAINT usage_counter_days_stripe_check CHECK (stripe >= 0 AND stripe < 16)');
  await knex.raw('ALTER TABLE usage_counter_days DROP CONSTRAINT usage_counter_days_pkey');
  await knex.raw('ALTER TABLE usage_counter_days ADD CONSTRAINT usage_counter_days_pkey PRIMARY KEY (counter_id, day, stripe)');
}

export async function down(knex: Knex): Promise<void> {
  // Each day's stripes summed into one row again before the key forgets them.
  await knex.raw(`WITH merged AS (
      DELETE FROM usage_counter_days WHERE stripe <> 0 RETURNING counter_id, day, value
    )
    INSERT INTO usage_counter_days (counter_id, day, stripe, value)
    SELECT counter_id, day, 0, sum(value) FROM merged GROUP BY 1, 2
    ON CONFLICT (counter_id, day, stripe) DO UPDATE SET value = usage_counter_days.value + excluded.value`);
  await knex.raw('ALTER TABLE usage_counter_days DROP CONSTRAINT usage_counter_days_pkey');
  await knex.raw('ALTER TABLE usage_counter_days ADD CONSTRAINT usage_counter_days_pkey PRIMARY KEY (counter_id, day)');
  await knex.raw('ALTER TABLE usage_counter_days DROP COLUMN stripe');
}
