import type { Knex } from 'knex';

/**
 * An invoice line built from a plan holds the plan's unit price (NUMERIC(24,10)) and the meter's
 * aggregate (sums of NUMERIC(30,10) values): the line's columns take both exactly, never rounded.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE invoice_items ALTER COLUMN quantity TYPE NUMERIC(40, 10), ALTER COLUMN price TYPE NUMERIC(30, 10)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE invoice_items ALTER COLUMN quantity TYPE NUMERIC(24, 6), ALTER COLUMN price TYPE NUMERIC(24, 6)');
}
