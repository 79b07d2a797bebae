import type { Knex } from 'knex';

export interface SettingsRow {
  base_currency: string;
  timezone: string;
  invoice_number_format: string;
  payment_terms_days: number;
  auto_raise_generated_invoices: boolean;
  auto_send_generated_invoices: boolean;
  updated_at: Date;
}

/** One row per organisation, made with the defaults the first time anyone asks. */
export async function getOrganisationSettings(db: Knex, organisationId: string): Promise<SettingsRow> {
  await db('organisation_settings').insert({ organisation_id: organisationId }).onConflict('organisation_id').ignore();
  return db('organisation_settings').where({ organisation_id: organisationId }).first();
}
