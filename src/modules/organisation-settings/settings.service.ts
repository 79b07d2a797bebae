import type { Knex } from 'knex';
import { AppError, orNotFound } from '../../domain/errors';
import { chargesIn } from '../charges';
import { getOrganisationSettings, updateOrganisationSettings, type PaymentDetails, type SettingsChanges, type SettingsRow } from './settings.repository';

export interface OrganisationSettings {
  baseCurrency: string;
  timezone: string;
  invoiceNumberFormat: string;
  creditNoteNumberFormat: string;
  paymentTermsDays: number;
  autoRaiseGeneratedInvoices: boolean;
  autoSendGeneratedInvoices: boolean;
  /** Days a paid or cancelled invoice's workflow stays open for an undo before it completes. */
  invoiceUndoWindowDays: number;
  /** Days after an unpaid invoice's due date on which a reminder is e-mailed, ascending. */
  dunningScheduleDays: number[];
  /** BCP 47: how invoices and credit notes write numbers and dates, unless the customer has its own. */
  locale: string;
  /** Printed on every invoice; null when none are set. */
  paymentDetails: PaymentDetails | null;
  /** Whole UTC months of usage events kept before the current one; null keeps them all. */
  usageRetentionMonths: number | null;
  updatedAt: string;
}

export type SettingsUpdate = Partial<Omit<OrganisationSettings, 'updatedAt'>>;

const toSettings = (row: SettingsRow): OrganisationSettings => ({
  baseCurrency: row.base_currency,
  timezone: row.timezone,
  invoiceNumberFormat: row.invoice_number_format,
  creditNoteNumberFormat: row.credit_note_number_format,
  paymentTermsDays: row.payment_terms_days,
  autoRaiseGeneratedInvoices: row.auto_raise_generated_invoices,
  autoSendGeneratedInvoices: row.auto_send_generated_invoices,
  invoiceUndoWindowDays: row.invoice_undo_window_days,
  dunningScheduleDays: row.dunning_schedule_days,
  locale: row.locale,
  paymentDetails: row.payment_details,
  usageRetentionMonths: row.usage_retention_months,
  updatedAt: row.updated_at.toISOString(),
});

/** Only the fields given change; an undefined one is left out rather than cleared. */
function columnsOf(update: SettingsUpdate): SettingsChanges {
  const columns: SettingsChanges = {
    base_currency: update.baseCurrency,
    timezone: update.timezone,
    invoice_number_format: update.invoiceNumberFormat,
    credit_note_number_format: update.creditNoteNumberFormat,
    payment_terms_days: update.paymentTermsDays,
    auto_raise_generated_invoices: update.autoRaiseGeneratedInvoices,
    auto_send_generated_invoices: update.autoSendGeneratedInvoices,
    invoice_undo_window_days: update.invoiceUndoWindowDays,
    dunning_schedule_days: update.dunningScheduleDays,
    locale: update.locale,
    // jsonb: the driver sends the object as JSON; null removes it.
    payment_details: update.paymentDetails,
    usage_retention_months: update.usageRetentionMonths,
  };
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
}

export function createOrganisationSettingsService(db: Knex) {
  return {
    async get(organisationId: string): Promise<OrganisationSettings> {
      return toSettings(await getOrganisationSettings(db, organisationId));
    },

    /** The undo window of an organisation's paid and cancelled invoices, in milliseconds. */
    async invoiceUndoWindowMs(organisationId: string): Promise<number> {
      const { invoice_undo_window_days: days } = await getOrganisationSettings(db, organisationId);
      return days * 24 * 60 * 60 * 1000;
    },

    async update(organisationId: string, update: SettingsUpdate): Promise<OrganisationSettings> {
      // The row is made on first use, so an organisation that never read its settings can still change them.
      return db.transaction(async (trx) => {
        // A change of zone waits for billing that read the zone to commit its charges, and billing waits for it.
        const current = await getOrganisationSettings(trx, organisationId, update.timezone !== undefined ? 'update' : undefined);
        // Usage windows are days in this zone, and runs read every charged window again: in another zone
        // a billed month would cover other instants, and the next run would correct it by the difference.
        if (update.timezone !== undefined && !sameZone(update.timezone, current.timezone) && (await chargesIn(trx).anyUsageOf(organisationId))) {
          throw AppError.conflict("The organisation's usage has been billed in windows of days in its timezone, which can no longer change; a customer's own timezone still can");
        }
        return toSettings(orNotFound(await updateOrganisationSettings(trx, organisationId, columnsOf(update)), 'Settings'));
      });
    },
  };
}

/** Whether two names are of one zone (a link and its target, an older and a newer name): its days are the same instants. */
function sameZone(a: string, b: string): boolean {
  const canonical = (zone: string) => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  return a === b || canonical(a) === canonical(b);
}

export type OrganisationSettingsService = ReturnType<typeof createOrganisationSettingsService>;
