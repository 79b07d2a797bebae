import type { Knex } from 'knex';

/**
 * The rollups' primary key carries each row's sum, count and maximum, so that a query of one customer's
 * usage (its rollup rows of a month, written among every other customer's, so each on a page of its own)
 * is answered from the key alone, an index-only scan, instead of a visit to the table for every row. The
 * new key is built concurrently, so that ingestion goes on while a large table is indexed; the swap of
 * keys that follows is a change of catalog entries, under a lock held for that moment only.
 */
export const config = { transaction: false };

const KEY = 'meter_id, customer_entity_id, bucket_start, group_values';
const LOCK_NOT_AVAILABLE = '55P03';
const SWAP_ATTEMPTS = 30;

async function swapKey(knex: Knex, include: string): Promise<void> {
  // A build cut short earlier leaves an invalid index of the name behind: it goes, and is built again.
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS meter_rollups_key_next');
  await knex.raw(`CREATE UNIQUE INDEX CONCURRENTLY meter_rollups_key_next ON meter_rollups (${KEY})${include}`);
  // The swap waits a second at most for the table's lock (writers queue behind a waiting swap), and is
  // tried again after a pause while a long transaction holds it; past the last try the migration fails and
  // may be run again.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await knex.transaction(async (trx) => {
        await trx.raw("SET LOCAL lock_timeout = '1s'");
        await trx.raw('ALTER TABLE meter_rollups DROP CONSTRAINT meter_rollups_pkey, ADD CONSTRAINT meter_rollups_pkey PRIMARY KEY USING INDEX meter_rollups_key_next');
      });
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE || attempt >= SWAP_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

export async function up(knex: Knex): Promise<void> {
  await swapKey(knex, ' INCLUDE (sum, count, max)');
}

export async function down(knex: Knex): Promise<void> {
  await swapKey(knex, '');
}
