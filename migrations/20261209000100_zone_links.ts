import type { Knex } from 'knex';

/**
 * `CET`, `EET`, `MET` and `WET` are also abbreviations, which PostgreSQL reads before zone names: `AT TIME
 * ZONE 'CET'` is UTC+01:00 all year there, where the runtime (and the time-zone database) gives CET summer
 * time. The API now takes them as the zones tzdata 2024b links them to; this migration renames those
 * already stored, so that every day read in SQL is the day the runtime reads.
 *
 * A usage counter is renamed unless the organisation already counts the same usage in the zone it links to
 * (two counters would then share one identity); it keeps its name, and the entitlements and alerts counting
 * with it keep theirs. Day rows counted before keep the days they were counted on; the next refold of the
 * counter (an edit or deletion of its usage, a redefined meter) counts them anew.
 */
const LINKS: ReadonlyArray<readonly [string, string]> = [
  ['CET', 'Europe/Brussels'],
  ['EET', 'Europe/Athens'],
  ['MET', 'Europe/Brussels'],
  ['WET', 'Europe/Lisbon'],
];

export async function up(knex: Knex): Promise<void> {
  for (const [name, zone] of LINKS) {
    await knex('organisation_settings').where({ timezone: name }).update({ timezone: zone });
    await knex('customers').where({ timezone: name }).update({ timezone: zone });
    await knex('invoice_run_schedules').where({ timezone: name }).update({ timezone: zone });
    await knex.raw(
      `UPDATE usage_counters AS counter SET time_zone = :zone
        WHERE counter.time_zone = :name
          AND NOT EXISTS (SELECT 1 FROM usage_counters AS twin
                           WHERE twin.organisation_id = counter.organisation_id AND twin.meter_id = counter.meter_id
                             AND twin.customer_id = counter.customer_id AND twin.time_zone = :zone AND twin.filters = counter.filters)`,
      { name, zone },
    );
    await knex.raw(
      `UPDATE entitlements SET time_zone = :zone
        WHERE time_zone = :name AND EXISTS (SELECT 1 FROM usage_counters WHERE usage_counters.id = entitlements.counter_id AND usage_counters.time_zone = :zone)`,
      { name, zone },
    );
    await knex.raw(
      `UPDATE alerts SET counter_time_zone = :zone
        WHERE counter_time_zone = :name AND EXISTS (SELECT 1 FROM usage_counters WHERE usage_counters.id = alerts.counter_id AND usage_counters.time_zone = :zone)`,
      { name, zone },
    );
  }
}

/** The zones stay as they are: they are the same zones, under the names every reader agrees on. */
export async function down(): Promise<void> {}
