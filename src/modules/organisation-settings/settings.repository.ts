import type { Knex } from 'knex';
import { dayIn } from '../../domain/zoned-days';

/** How customers pay the organisation, as invoices print it; each field optional. */
export interface PaymentDetails {
  accountHolder?: string;
  bankName?: string;
  accountNumber?: string;
  /** Without spaces, upper case. */
  iban?: string;
  /** Without spaces, upper case. */
  bic?: string;
  paymentLink?: string;
  /** The reference customers quote; `{number}` stands for the invoice number. */
  reference?: string;
}

export interface SettingsRow {
  base_currency: string;
  timezone: string;
  invoice_number_format: string;
  credit_note_number_format: string;
  payment_terms_days: number;
  auto_raise_generated_invoices: boolean;
  auto_send_generated_invoices: boolean;
  invoice_undo_window_days: number;
  /** Days after an invoice's due date on which a reminder goes out, ascending. */
  dunning_schedule_days: number[];
  /** BCP 47: how invoices and credit notes write numbers and dates, unless the customer has its own. */
  locale: string;
  payment_details: PaymentDetails | null;
  /** Whole UTC months of usage events kept before the current one; null keeps them all. */
  usage_retention_months: number | null;
  updated_at: Date;
}

export type SettingsChanges = Partial<Omit<SettingsRow, 'updated_at'>>;

/**
 * One row per organisation, made with the defaults the first time anyone asks. `lock`, inside a
 * transaction: `update` for a change of the time zone, `keyShare` for billing that reads it (the two wait
 * for each other; other changes of the settings wait for neither).
 */
export async function getOrganisationSettings(db: Knex, organisationId: string, lock?: 'update' | 'keyShare'): Promise<SettingsRow> {
  await db('organisation_settings').insert({ organisation_id: organisationId }).onConflict('organisation_id').ignore();
  const query = db('organisation_settings').where({ organisation_id: organisationId });
  if (lock === 'update') query.forUpdate();
  if (lock === 'keyShare') query.forKeyShare();
  return query.first();
}

/**
 * The one rule for dates the service stamps: today (or the day of `at`) in the customer's time zone when
 * one is given, else in the organisation's. Invoice, credit note and run dates, due dates, "as of" days
 * and the defaults of date fields all come from here.
 */
export async function organisationToday(db: Knex, organisationId: string, customerZone?: string | null, at: Date = new Date()): Promise<string> {
  return dayIn(await zoneOf(db, organisationId, customerZone), at);
}

/** The zone dates are read in: the customer's when it has one, else the organisation's. */
export async function zoneOf(db: Knex, organisationId: string, customerZone?: string | null): Promise<string> {
  return customerZone ?? (await getOrganisationSettings(db, organisationId)).timezone;
}

/** Sets the given columns of the organisation's row; undefined when it has none yet. */
export async function updateOrganisationSettings(db: Knex, organisationId: string, changes: SettingsChanges): Promise<SettingsRow | undefined> {
  const [row] = await db('organisation_settings')
    .where({ organisation_id: organisationId })
    .update({ ...changes, updated_at: db.fn.now() })
    .returning<SettingsRow[]>('*');
  return row;
}

/** The organisations that set a usage retention, with it in months, by organisation id. */
export async function usageRetentions(db: Knex): Promise<{ organisationId: string; months: number }[]> {
  const rows: Array<{ organisation_id: string; usage_retention_months: number }> = await db('organisation_settings')
    .whereNotNull('usage_retention_months')
    .orderBy('organisation_id')
    .select('organisation_id', 'usage_retention_months');
  return rows.map((row) => ({ organisationId: row.organisation_id, months: row.usage_retention_months }));
}
