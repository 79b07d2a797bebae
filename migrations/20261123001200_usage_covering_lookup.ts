import type { Knex } from 'knex';

/**
 * The meter lookup index carries each event's value, so that the sums, counts and maxima that meters
 * and invoice runs read are answered from the index alone (an index-only scan), without a visit to the
 * table for every event. Built concurrently, so that ingestion goes on while a large table is indexed.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_events_meter_lookup_covering ON usage_events (organisation_id, metric, customer_entity_id, "timestamp") INCLUDE (value)');
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS usage_events_meter_lookup');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_events_meter_lookup ON usage_events (organisation_id, metric, customer_entity_id, "timestamp")');
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS usage_events_meter_lookup_covering');
}
