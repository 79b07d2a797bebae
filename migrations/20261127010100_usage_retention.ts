import type { Knex } from 'knex';

/**
 * How many whole UTC months of usage events an organisation keeps before the current one; null (the
 * default) keeps them all. The daily partition maintenance deletes older months that are billed and paid.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.integer('usage_retention_months');
  });
  await knex.raw('ALTER TABLE organisation_settings ADD CONSTRAINT organisation_settings_usage_retention_months_check CHECK (usage_retention_months BETWEEN 1 AND 1200)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organisation_settings', (table) => {
    table.dropColumn('usage_retention_months');
  });
}
