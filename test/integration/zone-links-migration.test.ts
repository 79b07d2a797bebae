import { useDatabaseBefore } from './support/migration-database';

/**
 * The migration that renames the zones PostgreSQL reads as fixed offsets (`CET` as UTC+01:00 all year) to
 * the zones they link to, on a database of its own holding an organisation, a customer and usage counters
 * named by them.
 */
const ZONE_LINKS = '20261209000100_zone_links.ts';
const database = useDatabaseBefore(ZONE_LINKS, 'zone_links');

it('when zones named CET, EET, MET and WET are migrated, then each is renamed to the zone it links to, but a counter whose twin already counts in that zone', async () => {
  await database.db('organisations').insert({ id: 'org_cet', name: 'Brussels Ltd' });
  await database.db('organisation_settings').insert({ organisation_id: 'org_cet', timezone: 'CET' });
  await database.db('customers').insert([
    { id: 'cus_wet', organisation_id: 'org_cet', name: 'Lisbon', timezone: 'WET' },
    { id: 'cus_eet', organisation_id: 'org_cet', name: 'Athens', timezone: 'EET' },
    { id: 'cus_berlin', organisation_id: 'org_cet', name: 'Berlin', timezone: 'Europe/Berlin' },
  ]);
  await database.db('meters').insert({ id: 'mtr_tokens', organisation_id: 'org_cet', name: 'tokens', metric: 'tokens', aggregation: 'sum' });
  const counter = (id: string, customerId: string, timeZone: string) => ({ id, organisation_id: 'org_cet', customer_id: customerId, meter_id: 'mtr_tokens', time_zone: timeZone });
  await database.db('usage_counters').insert([
    counter('ctr_cet', 'cus_wet', 'CET'),
    // Counts the same usage as the Brussels counter beside it: renaming it would give two counters one identity.
    counter('ctr_met', 'cus_wet', 'MET'),
    counter('ctr_eet', 'cus_eet', 'EET'),
    counter('ctr_berlin', 'cus_berlin', 'Europe/Berlin'),
  ]);

  await database.db.migrate.up({ name: ZONE_LINKS });

  expect(await database.db('organisation_settings').where({ organisation_id: 'org_cet' }).first('timezone')).toEqual({ timezone: 'Europe/Brussels' });
  const customers = Object.fromEntries((await database.db('customers').select('id', 'timezone')).map((row: { id: string; timezone: string }) => [row.id, row.timezone]));
  expect(customers).toEqual({ cus_wet: 'Europe/Lisbon', cus_eet: 'Europe/Athens', cus_berlin: 'Europe/Berlin' });
  const counters = Object.fromEntries((await database.db('usage_counters').select('id', 'time_zone')).map((row: { id: string; time_zone: string }) => [row.id, row.time_zone]));
  expect(counters).toEqual({ ctr_cet: 'Europe/Brussels', ctr_met: 'MET', ctr_eet: 'Europe/Athens', ctr_berlin: 'Europe/Berlin' });
});
