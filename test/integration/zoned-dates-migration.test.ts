import { calendarDay } from '../../src/db/dates';
import { useDatabaseBefore } from './support/migration-database';

/**
 * The migration that gives credit notes their date, on a database of its own holding notes written before
 * it: each gets the day it was issued (or, a draft, drafted) in its organisation's zone, else UTC's (no
 * customer had a zone before this migration added it).
 */
const ZONED_DATES = '20261127000200_zoned_dates.ts';
const database = useDatabaseBefore(ZONED_DATES, 'zoned');

it('when credit notes written before notes had dates are migrated, then each is dated in its organisation’s zone, else UTC’s, and the date is required', async () => {
  // 10:30 UTC on 20 November: the 21st at Kiritimati (UTC+14), the 19th at Pago Pago (UTC-11), the 20th in UTC.
  const issued = '2026-11-20T10:30:00Z';
  await database.db('organisations').insert([
    { id: 'org_zoned', name: 'Zoned Ltd' },
    { id: 'org_plain', name: 'Plain Ltd' },
  ]);
  await database.db('organisation_settings').insert({ organisation_id: 'org_zoned', timezone: 'Pacific/Kiritimati' });
  const customer = (id: string, organisationId: string) => ({ id, organisation_id: organisationId, name: id });
  await database.db('customers').insert([customer('cus_org_zone', 'org_zoned'), customer('cus_plain', 'org_plain')]);
  await database.db('invoices').insert([
    { id: 'inv_zoned', organisation_id: 'org_zoned', customer_id: 'cus_org_zone', currency: 'USD', date: '2026-11-01' },
    { id: 'inv_plain', organisation_id: 'org_plain', customer_id: 'cus_plain', currency: 'USD', date: '2026-11-01' },
  ]);
  const note = (id: string, organisationId: string, invoiceId: string, customerId: string, at: { status?: string; issued_at?: string; created_at?: string }) => ({
    id,
    organisation_id: organisationId,
    invoice_id: invoiceId,
    customer_id: customerId,
    reason: 'Before dates',
    currency: 'USD',
    subtotal: '10',
    tax_total: '0',
    total: '10',
    ...at,
  });
  await database.db('credit_notes').insert([
    note('crn_org_zone', 'org_zoned', 'inv_zoned', 'cus_org_zone', { issued_at: issued, status: 'issued' }),
    note('crn_draft', 'org_zoned', 'inv_zoned', 'cus_org_zone', { created_at: issued }),
    note('crn_utc', 'org_plain', 'inv_plain', 'cus_plain', { issued_at: issued, status: 'issued' }),
  ]);

  await database.db.migrate.up({ name: ZONED_DATES });
  const dates = Object.fromEntries((await database.db('credit_notes').select('id', 'date')).map((row: { id: string; date: Date }) => [row.id, calendarDay(row.date)]));
  expect(dates).toEqual({ crn_org_zone: '2026-11-21', crn_draft: '2026-11-21', crn_utc: '2026-11-20' });
  const column = await database.db.raw("SELECT is_nullable FROM information_schema.columns WHERE table_name = 'credit_notes' AND column_name = 'date'");
  expect(column.rows).toEqual([{ is_nullable: 'NO' }]);
});
