import type { Knex } from 'knex';

/**
 * A usage alert on a meter that sums or counts reads its customer's usage from a usage counter (per
 * calendar day of the time zone it was made in) instead of folding the meter's rollups at every evaluation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('alerts', (table) => {
    table.text('counter_id');
    table.text('counter_time_zone');
  });
  await knex.raw('ALTER TABLE alerts ADD CONSTRAINT alerts_counter_check CHECK ((counter_id IS NULL) = (counter_time_zone IS NULL))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('alerts', (table) => {
    table.dropColumn('counter_id');
    table.dropColumn('counter_time_zone');
  });
}
