import { domainEvent } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import type { Mailer } from '../../mail/mailer';
import type { MailTemplate, TemplateRenderer } from '../../mail/templating';
import { contactGroupsIn } from '../contact-groups';
import { mailWithPdf, amountDue, invoicesIn, type InvoiceRow } from '../invoices';
import { loadCreditNoteDocument, creditableOf, creditedOf, creditNotesIn, type CreditNoteChange, type CreditNoteRow, toCreditNote } from '../credit-notes';
import { assertCreditable, creditableAmounts } from '../../domain/credit-notes';
import { AppError, orNotFound } from '../../domain/errors';
import { formatInvoiceNumber } from '../../domain/invoice-number';
import { Decimal, formatAmount, toDecimal } from '../../domain/money';
import { creditsIn } from '../credits';
import { planChangesIn } from '../contracts';
import { customerToday } from '../customers';
import { getOrganisationSettings } from '../organisation-settings';
import { paymentsIn } from '../payments';
import { syncInvoiceRevenue } from '../revenue';

/** One step of a credit note's workflow; `stepId` is fixed by the workflow, so a retried step is a no-op. */
export interface CreditNoteStepInput {
  organisationId: string;
  creditNoteId: string;
  stepId: string;
}

/** The message a credit note goes out with; its variables are HTML-escaped in the HTML part. */
const CREDIT_NOTE_MAIL: MailTemplate = {
  subject: 'Credit note {{number}} from {{sellerName}}',
  html: '<p>Dear {{customerName}},</p><p>Please find attached credit note {{number}}, which credits {{total}} {{currency}} on invoice {{invoiceNumber}}.</p><p>Reason: {{reason}}</p>',
  // The text part is the text of the HTML (mailWithPdf), so that both say the same.
  text: null,
};

/** What a credit note's step announces, with the note as it is after the step. */
type CreditNoteEvent = 'credit_note.issued' | 'credit_note.voided' | 'credit_note.transition_undone';

interface Step {
  trx: Knex;
  note: CreditNoteRow;
  invoice: InvoiceRow;
}

/**
 * The steps of the credit note workflow, each one transaction: the invoice is locked first, then the
 * credit note (the order every writer of either keeps), and a step already applied returns at once.
 */
export function createCreditNoteLifecycleService(deps: { db: Knex; mailer: Mailer; templates: TemplateRenderer }) {
  const { db, mailer, templates } = deps;

  /** What a step changes, and the event it announces. */
  type Outcome = { change: Omit<CreditNoteChange, 'last_step_id'>; event: CreditNoteEvent };

  function inStep(input: CreditNoteStepInput, work: (step: Step) => Promise<Outcome>): Promise<void> {
    return db.transaction(async (trx) => {
      const notes = creditNotesIn(trx);
      const unlocked = orNotFound(await notes.find(input.organisationId, input.creditNoteId), 'Credit note');
      const invoice = orNotFound(await invoicesIn(trx).lock(input.organisationId, unlocked.invoice_id), 'Invoice');
      // Gone since it was read (a draft whose request gave up): not found, which no retry mends.
      const note = orNotFound(await notes.lock(input.organisationId, input.creditNoteId), 'Credit note');
      if (note.last_step_id === input.stepId) return;
      const { change, event } = await work({ trx, note, invoice });
      await notes.apply(note.id, { ...change, last_step_id: input.stepId });
      // Revenue is derived: the invoice's items less what issued credit notes credit on them.
      await syncInvoiceRevenue(trx, invoice, invoice.status);
      await emit(trx, note, event);
    });
  }

  /** A note that lowered what an unpaid invoice owed cannot stop counting once the invoice is paid. */
  function assertDueStillOpen({ note, invoice }: Step): void {
    if (note.settlement === 'reduces_due' && invoice.status === 'paid') {
      throw AppError.conflict('the invoice was paid for the amount this credit note left owing; undo the payment first');
    }
  }

  async function emit(trx: Knex, note: CreditNoteRow, type: CreditNoteEvent): Promise<void> {
    const current = (await creditNotesIn(trx).find(note.organisation_id, note.id))!;
    await recordEvent(trx, note.organisation_id, domainEvent(type, toCreditNote(current)));
  }

  /**
   * The note's number and date: kept from an earlier issue, else the next of the organisation's credit note
   * series, dated today in the customer's zone (else the organisation's).
   */
  async function numberOf({ trx, note }: Step): Promise<Pick<CreditNoteRow, 'number' | 'number_sequence'> & { date?: string }> {
    if (note.number) return { number: note.number, number_sequence: note.number_sequence };
    const sequence = await invoicesIn(trx).takeNextNumber(note.organisation_id, 'credit_note');
    const { credit_note_number_format: format } = await getOrganisationSettings(trx, note.organisation_id);
    const date = await customerToday(trx, note.organisation_id, note.customer_id);
    return { number: formatInvoiceNumber(format, sequence, date), number_sequence: sequence, date };
  }

  /** Gives the credited amount to the customer: owed less, paid back, or added to the credit balance. */
  async function settle({ trx, note, invoice }: Step): Promise<Pick<CreditNoteChange, 'settlement' | 'refund_payment_id'>> {
    if (invoice.status !== 'paid') {
      const due = toDecimal(amountDue(invoice) ?? '0').minus(await paymentsIn(trx).paidTowards(invoice.organisation_id, invoice.id, invoice.currency));
      if (toDecimal(note.total).greaterThan(due)) throw AppError.conflict(`the invoice owes ${formatAmount(Decimal.max(due, 0), invoice.currency)} ${invoice.currency}, less than this credit note's ${formatAmount(note.total, note.currency)}: the rest was paid with the customer's credit or payments recorded against it; mark the invoice paid, then credit it`);
      await invoicesIn(trx).addCreditedDue(invoice.id, note.total);
      return { settlement: 'reduces_due', refund_payment_id: null };
    }
    if (note.refund) {
      const payments = paymentsIn(trx);
      const refundable = await payments.refundable(note.organisation_id, invoice.id);
      if (toDecimal(note.total).greaterThan(refundable)) {
        throw AppError.conflict(`the invoice's payments less its refunds come to ${formatAmount(refundable, note.currency)} ${note.currency}, less than this refund of ${formatAmount(note.total, note.currency)}: credit the rest to the customer's balance (refund: false)`);
      }
      // A gateway pays the whole refund back, from what it took: never more than it still holds of that.
      // What it refunded by its own means (its dashboard) is booked by the next refund note, not paid again.
      const gateway = note.refund_payment_id ? undefined : await payments.gatewayRefundable(invoice.id);
      if (gateway && toDecimal(gateway.unbooked).greaterThan(0)) {
        if (toDecimal(note.total).greaterThan(gateway.unbooked)) {
          throw AppError.conflict(
            `${gateway.provider} refunded ${formatAmount(gateway.unbooked, gateway.currency)} ${gateway.currency} of this invoice by its own means (its dashboard) that no credit note books yet: a refund of at most that books it without asking ${gateway.provider} again; refund more after it`,
          );
        }
      } else if (gateway && toDecimal(note.total).greaterThan(gateway.amount)) {
        throw AppError.conflict(
          `the refund goes back through ${gateway.provider}, which holds ${formatAmount(gateway.amount, gateway.currency)} ${gateway.currency} of what it collected for the invoice, less than this refund of ${formatAmount(note.total, note.currency)}: refund at most that, and credit the rest to the customer's balance (refund: false)`,
        );
      }
      if (note.refund_payment_id) {
        await payments.setDeleted(note.refund_payment_id, false);
        return { settlement: 'refund', refund_payment_id: note.refund_payment_id };
      }
      const payment = await payments.insert(note.organisation_id, {
        customerId: note.customer_id,
        invoiceId: invoice.id,
        amount: toDecimal(note.total).negated().toFixed(),
        currency: note.currency,
        paidAt: new Date(),
        method: 'refund',
        reference: null,
        creditNoteId: note.id,
        idempotency: { scope: 'system', key: `credit-note:${note.id}:refund`, fingerprint: null },
      });
      return { settlement: 'refund', refund_payment_id: payment.id };
    }
    await creditsIn(trx).append({
      organisationId: note.organisation_id,
      customerId: note.customer_id,
      currency: note.currency,
      kind: 'credit_note',
      amount: note.total,
      reason: `credit note ${note.number ?? note.id}`,
      creditNoteId: note.id,
      invoiceId: invoice.id,
    });
    return { settlement: 'balance', refund_payment_id: null };
  }

  /** Takes back what `settle` gave: the refund deleted, the balance lowered (refused if it was spent). */
  async function unsettle({ trx, note }: Step, why: string): Promise<void> {
    const throughGateway = note.settlement === 'refund' ? await paymentsIn(trx).gatewayRefundOf(note.id) : undefined;
    if (throughGateway && throughGateway.status !== 'failed') {
      throw AppError.conflict(`the refund of this credit note was paid back through the payment gateway (${throughGateway.provider_refund_id ?? 'asked'}): it cannot be taken back by ${why === 'voided' ? 'voiding' : 'undoing'} the credit note`);
    }
    if (note.settlement === 'reduces_due') await invoicesIn(trx).addCreditedDue(note.invoice_id, toDecimal(note.total).negated().toFixed());
    if (note.settlement === 'refund' && note.refund_payment_id) await paymentsIn(trx).setDeleted(note.refund_payment_id, true);
    if (note.settlement === 'balance') {
      await creditsIn(trx).append({
        organisationId: note.organisation_id,
        customerId: note.customer_id,
        currency: note.currency,
        kind: 'adjustment',
        amount: toDecimal(note.total).negated().toFixed(),
        reason: `credit note ${note.number} ${why}`,
        creditNoteId: note.id,
        invoiceId: note.invoice_id,
        reverses: { creditNoteId: note.id },
      });
    }
  }

  /**
   * A plan change made after the note was issued credited the fees the note credits net of the note: were
   * the note voided, the invoice would charge those fees in full again while the change gave back only the
   * rest, and the customer would pay twice for the days the change gave up.
   */
  async function assertNoChangeCountedIt({ trx, note, invoice }: Step): Promise<void> {
    if (!invoice.contract_id || !note.issued_at) return;
    const items = (await creditNotesIn(trx).find(note.organisation_id, note.id))!.items.map((line) => line.invoice_item_id);
    const change = await planChangesIn(trx).creditingItemsSince(invoice.contract_id, invoice.id, items, note.issued_at);
    if (change) throw AppError.conflict(`plan change ${change}, made after this credit note, credited the same fees net of it: taking the note back would charge them again`);
  }

  /** A voided note counts again once undone: only if the invoice still has room for it. */
  async function assertRoomFor({ trx, note, invoice }: Step): Promise<void> {
    const credited = await creditedOf(trx, invoice);
    const lines = (await creditNotesIn(trx).find(note.organisation_id, note.id))!.items;
    const creditable = creditableAmounts(await creditableOf(trx, invoice));
    const overItem = lines.some((line) => toDecimal(credited.byItem.get(line.invoice_item_id) ?? '0').plus(line.amount).greaterThan(creditable.get(line.invoice_item_id) ?? 0));
    if (overItem || toDecimal(credited.total).plus(note.total).greaterThan(invoice.total ?? '0')) {
      throw AppError.conflict('other credit notes took what this one credited: undoing its void would credit more than the invoice');
    }
  }

  return {
    /**
     * E-mails an issued credit note, its PDF attached, to every contact of the customer's contact groups.
     * At least once: every attempt carries the same Message-ID, so that mail systems fold the copies. A
     * note voided or undone meanwhile is not sent.
     */
    async mail(input: { organisationId: string; creditNoteId: string }): Promise<void> {
      const note = orNotFound(await creditNotesIn(db).find(input.organisationId, input.creditNoteId), 'Credit note');
      if (note.status !== 'issued') return;
      const recipients = await contactGroupsIn(db).emailsOfCustomer(input.organisationId, note.customer_id);
      if (recipients.length === 0) return;
      const document = await loadCreditNoteDocument(db, input.organisationId, note.id);
      const invoice = await invoicesIn(db).findRow(input.organisationId, note.invoice_id);
      const message = await templates.render(CREDIT_NOTE_MAIL, {
        number: note.number,
        invoiceNumber: invoice?.number ?? '',
        total: formatAmount(note.total, note.currency),
        currency: note.currency,
        reason: note.reason,
        sellerName: document.seller?.name ?? '',
        customerName: document.customer?.name ?? '',
      });
      await mailWithPdf(mailer, { to: recipients, message, document, id: note.id, messageId: `<credit-note-${note.id}-${note.number}@billing>` });
    },

    /** Number, settlement, revenue, `credit_note.issued`. */
    async issue(input: CreditNoteStepInput): Promise<void> {
      await inStep(input, async (step) => {
        const { note } = step;
        if (note.status !== 'draft') throw AppError.conflict(`the credit note is ${note.status}, not draft`);
        assertCreditable(step.invoice.status, step.note.refund);
        const numbering = await numberOf(step);
        const settlement = await settle({ ...step, note: { ...note, ...numbering } });
        return { change: { status: 'issued', issued_at: new Date(), voided_at: null, ...numbering, ...settlement }, event: 'credit_note.issued' };
      });
    },

    /** An issued note's settlement taken back; a draft simply never counts. `credit_note.voided`. */
    async void(input: CreditNoteStepInput): Promise<void> {
      await inStep(input, async (step) => {
        const { note } = step;
        if (note.status === 'voided') throw AppError.conflict('the credit note is voided already');
        if (note.status === 'issued') {
          assertDueStillOpen(step);
          await assertNoChangeCountedIt(step);
          await unsettle(step, 'voided');
        }
        return { change: { status: 'voided', voided_at: new Date() }, event: 'credit_note.voided' };
      });
    },

    /**
     * The compensation of the last step: a voided note is standing again (issued, or a draft if it never
     * was issued), an issued one is a draft again, keeping its number for when it is issued again.
     */
    async undo(input: CreditNoteStepInput): Promise<void> {
      await inStep(input, async (step) => {
        const { note } = step;
        if (note.status === 'draft') throw AppError.conflict('nothing to undo: the credit note is a draft');
        if (note.status === 'voided') {
          assertCreditable(step.invoice.status, step.note.refund);
          await assertRoomFor(step);
          if (!note.issued_at) return { change: { status: 'draft', voided_at: null }, event: 'credit_note.transition_undone' };
          return { change: { status: 'issued', voided_at: null, ...(await settle(step)) }, event: 'credit_note.transition_undone' };
        }
        assertDueStillOpen(step);
        await assertNoChangeCountedIt(step);
        await unsettle(step, 'undone');
        return { change: { status: 'draft', issued_at: null, settlement: null }, event: 'credit_note.transition_undone' };
      });
    },
  };
}

export type CreditNoteLifecycleService = ReturnType<typeof createCreditNoteLifecycleService>;
