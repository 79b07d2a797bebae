import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { sendingFormerNames } from '../../http/former-names';
import { addDays } from '../../domain/billing-periods';
import { startOfDayIn } from '../../domain/zoned-days';
import { orNotFound } from '../../domain/errors';
import { Decimal, formatAmount, sumAmounts } from '../../domain/money';
import type { Mailer } from '../../mail/mailer';
import type { TemplateRenderer } from '../../mail/templating';
import type { ReminderInput, ReminderOutcome, ReminderPlan } from '../../../workflows/invoice-lifecycle.types';
import { contactGroupsIn } from '../contact-groups';
import { renderTemplateOfKind } from '../email-templates';
import { invoiceSettlements } from '../settlements';
import { loadInvoiceDocument, invoiceMailVariables, mailWithPdf, AGEING_BUCKETS, amountDue, invoicesIn, type AgeingBucket, type InvoiceRow } from '../invoices';
import { customerToday, customerZone } from '../customers';
import { getOrganisationSettings, organisationToday, zoneOf } from '../organisation-settings';

const DAY_MS = 24 * 60 * 60 * 1000;

const daysBetween = (from: string, to: string) => Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS);

/** Raised or sent, with something left to pay once credit and credit notes are counted: the customer owes it. */
const isOwed = (row: InvoiceRow) => (row.status === 'raised' || row.status === 'sent') && new Decimal(amountDue(row) ?? '0').greaterThan(0);

export interface CurrencyAgeing {
  currency: string;
  /** Everything owed in the currency, the buckets added up. */
  total: string;
  invoices: number;
  buckets: Record<AgeingBucket, string>;
}

/** Renamed to the one naming style; the former name is still sent, by the API and the chatbot alike. */
export const COLLECTIONS_RENAMES = { asOf: 'asOfDate' } as const;

export interface Collections {
  asOfDate: string;
  /** Deprecated: `asOfDate`'s former name. */
  asOf: string;
  currencies: CurrencyAgeing[];
}

/**
 * Collections: what is owed and for how long, and the reminders an unpaid invoice gets after its due date.
 * The invoice's workflow times the reminders; this service plans them from Postgres and sends each once.
 */
export function createCollectionsService(deps: { db: Knex; mailer: Mailer; templates: TemplateRenderer }) {
  const { db, mailer, templates } = deps;
  const invoices = invoicesIn(db);
  /** Today where the customer is, else where the organisation is. */
  const todayOf = (organisationId: string, customerId?: string) => (customerId ? customerToday(db, organisationId, customerId) : organisationToday(db, organisationId));

  return {
    /**
     * Totals of raised and sent invoices per currency, by days past their due date as of today: each
     * invoice's in its customer's time zone, else the organisation's, so that one customer's ageing is its
     * share of the organisation's.
     */
    async ageing(organisationId: string, filter: { customerId?: string } = {}): Promise<Collections> {
      const asOf = await todayOf(organisationId, filter.customerId);
      const byCurrency = new Map<string, CurrencyAgeing>();
      for (const row of await invoices.ageing(organisationId, await zoneOf(db, organisationId), filter.customerId)) {
        const entry = byCurrency.get(row.currency) ?? {
          currency: row.currency,
          total: formatAmount(0, row.currency),
          invoices: 0,
          buckets: Object.fromEntries(AGEING_BUCKETS.map((bucket) => [bucket, formatAmount(0, row.currency)])) as Record<AgeingBucket, string>,
        };
        entry.buckets[row.bucket] = formatAmount(row.amount, row.currency);
        entry.total = formatAmount(sumAmounts([entry.total, row.amount]), row.currency);
        entry.invoices += row.invoices;
        byCurrency.set(row.currency, entry);
      }
      return sendingFormerNames({ asOfDate: asOf, currencies: [...byCurrency.values()] }, COLLECTIONS_RENAMES);
    },

    /**
     * The reminders an invoice still has ahead: the days of the organisation's schedule after the latest
     * one sent. Nothing once the invoice is no longer owed (paid, cancelled, back to draft).
     */
    async reminderPlan(input: { organisationId: string; invoiceId: string }): Promise<ReminderPlan> {
      const row = orNotFound(await invoices.findRow(input.organisationId, input.invoiceId), 'Invoice');
      if (!isOwed(row) || !row.due_date) return { dueDate: null, daysAfterDue: [] };
      const { dunning_schedule_days: schedule, timezone } = await getOrganisationSettings(db, input.organisationId);
      const latestSent = Math.max(0, ...(await invoices.reminderDays(row.id)));
      const dueDate = calendarDay(row.due_date);
      const daysAfterDue = schedule.filter((days) => days > latestSent);
      // The start of each reminder's day where the customer is (else the organisation).
      const zone = (row.customer_id ? await customerZone(db, input.organisationId, row.customer_id) : null) ?? timezone;
      return { dueDate, daysAfterDue, sendAt: daysAfterDue.map((days) => startOfDayIn(addDays(dueDate, days), zone).getTime()) };
    },

    /**
     * E-mails one reminder of the schedule to the customer's contacts with the invoice attached, in the
     * organisation's reminder template (else the built-in message), then records it; the first one recorded
     * also emits `invoice.overdue`. A recorded reminder is never sent again; a crash between the e-mail and the record sends
     * again with the same Message-ID, so that mail systems can fold the copies.
     */
    async remind(input: ReminderInput): Promise<ReminderOutcome> {
      const row = orNotFound(await invoices.findRow(input.organisationId, input.invoiceId), 'Invoice');
      if (!isOwed(row) || !row.due_date) return 'not owed';
      if ((await invoices.reminderDays(row.id)).includes(input.daysAfterDue)) return 'already sent';
      const recipients = row.customer_id ? await contactGroupsIn(db).emailsOfCustomer(row.organisation_id, row.customer_id) : [];
      const messageId = `<invoice-${row.id}-reminder-${input.daysAfterDue}@billing>`;
      if (recipients.length > 0) {
        const document = await loadInvoiceDocument(db, row.organisation_id, row.id, invoiceSettlements);
        const dueDate = calendarDay(row.due_date);
        const message = await renderTemplateOfKind(db, templates, row.organisation_id, 'reminder', invoiceMailVariables(document, { daysOverdue: daysBetween(dueDate, await todayOf(row.organisation_id, row.customer_id ?? undefined)), daysAfterDue: input.daysAfterDue }));
        await mailWithPdf(mailer, { to: recipients, message, document, id: row.id, messageId });
      }
      await db.transaction(async (trx) => {
        const recorded = invoicesIn(trx);
        const first = (await recorded.reminderDays(row.id)).length === 0;
        if ((await recorded.recordReminder({ organisationId: row.organisation_id, invoiceId: row.id, daysAfterDue: input.daysAfterDue, sentTo: recipients, messageId })) && first) {
          // The first reminder is the moment the invoice is overdue by the organisation's schedule.
          await recordEvent(trx, row.organisation_id, domainEvent('invoice.overdue', (await recorded.find(row.organisation_id, row.id))!));
        }
      });
      return 'sent';
    },
  };
}

export type CollectionsService = ReturnType<typeof createCollectionsService>;
