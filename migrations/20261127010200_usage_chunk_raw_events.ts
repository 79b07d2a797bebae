import type { Knex } from 'knex';

/**
 * The claim check's raw events move to a `json` column kept out of line and uncompressed
 * (`raw_events`, STORAGE EXTERNAL): Postgres stores the text as sent, where `jsonb` parsed it into its
 * binary form and compressed it, then turned it back into text to read it. Writing, reading back and
 * clearing a 1,000-event chunk (210 kB) took 4.6 ms instead of 7.1 to 11.3 (bench/insert-forms.ts). The chunk lives
 * seconds, so the bytes saved by compression are not worth their CPU. Adding a nullable column changes
 * no row: the migration takes no time whatever the table holds, and chunks stored before it keep their
 * events in `events` until they are ingested.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE usage_batch_chunks ADD COLUMN raw_events json');
  await knex.raw('ALTER TABLE usage_batch_chunks ALTER COLUMN raw_events SET STORAGE EXTERNAL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('UPDATE usage_batch_chunks SET events = raw_events::jsonb WHERE raw_events IS NOT NULL');
  await knex.raw('ALTER TABLE usage_batch_chunks DROP COLUMN raw_events');
}
