import { domainEvent, type DomainEventType } from '../../domain/events';
import { recordEvent } from '../../events/outbox';
import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { addDays } from '../../domain/billing-periods';
import { AppError, orNotFound } from '../../domain/errors';
import { formatInvoiceNumber } from '../../domain/invoice-number';
import { Decimal, formatAmount } from '../../domain/money';
import { targetOf, type InvoiceStep } from '../../domain/invoice-state';
import type { Mailer } from '../../mail/mailer';
import type { TemplateRenderer } from '../../mail/templating';
import type { CancelInput, PayInput, StepInput } from '../../../workflows/invoice-lifecycle.types';
import { contactGroupsIn } from '../contact-groups';
import { customersIn, customerZone } from '../customers';
import { dayIn, startOfDayIn } from '../../domain/zoned-days';
import { renderTemplateOfKind } from '../email-templates';
import { getOrganisationSettings, zoneOf } from '../organisation-settings';
import { correctionBeyondHeld, creditNotesIn, type CreditNoteSettlement } from '../credit-notes';
import { contractsIn, planChangesIn } from '../contracts';
import { creditsIn } from '../credits';
import { markPaidPaymentKey, paymentsIn } from '../payments';
import { syncInvoiceRevenue } from '../revenue';
import { invoiceSettlements } from '../settlements';
import { loadInvoiceDocument, invoiceMailVariables, mailWithPdf, computeInvoiceTotals, lifecycleSnapshot, type LifecycleSnapshot, invoicesIn, type InvoiceAccess, type InvoiceRow, type InvoiceStatusChange, type TransitionRow } from '../invoices';

/** `YYYY-MM-DD` alone, rather than a date-time. */
const isDateOnly = (value: string) => value.length === 10;

/** The repositories a step works with, all on the step's transaction. */
function repositoriesOf(trx: Knex) {
  return { invoices: invoicesIn(trx), payments: paymentsIn(trx), creditNotes: creditNotesIn(trx) };
}

/**
 * Credit notes outlive what they credit only in order: an invoice with credit notes that count is not
 * cancelled, nor its raise undone; one whose notes paid back or put credit on the balance keeps its payment.
 */
async function assertNoCreditNotes(step: { creditNotes: ReturnType<typeof creditNotesIn>; invoice: InvoiceRow }, what: string, settlements?: CreditNoteSettlement[]): Promise<void> {
  if (await step.creditNotes.anyStanding(step.invoice.id, settlements)) throw AppError.conflict(`the invoice has credit notes that count; void them before you ${what}`);
}

/**
 * Nor is an invoice whose fees a plan change credits (on a later invoice, or pending): cancelled, the fee
 * would be given back twice; back to a draft, the line the credit names could change. And an invoice that
 * holds a plan change's credit lines is not cancelled: the customer would lose the credit.
 */
async function assertNoPlanChangeCredits(step: { trx: Knex; invoice: InvoiceRow; invoices: InvoiceAccess }, what: string, held = false): Promise<void> {
  if (!step.invoice.contract_id) return;
  if ((await planChangesIn(step.trx).creditsOnInvoice(step.invoice.contract_id, step.invoice.id)).size > 0) {
    throw AppError.conflict(`a plan change credits this invoice's fees; you cannot ${what}`);
  }
  const holding = held ? (await step.invoices.items(step.invoice.id)).find((item) => item.plan_change_id !== null) : undefined;
  if (holding) throw AppError.conflict(`the invoice credits plan change ${holding.plan_change_id}; you cannot ${what}`);
}

/** `contractFirst`: take the invoice's contract's row lock before the invoice's. */
interface StepOptions {
  contractFirst?: boolean;
}

type Step = ReturnType<typeof repositoriesOf> & {
  trx: Knex;
  invoice: InvoiceRow;
  /** Writes a status with its columns and carries the invoice's revenue records along. */
  setStatus(change: InvoiceStatusChange): Promise<void>;
  /** Moves the invoice to the step's target state and records the transition (invoice, seq) that makes it run once. */
  complete(name: InvoiceStep, change: Omit<InvoiceStatusChange, 'status'>, data?: object): Promise<void>;
};

/**
 * The outbox: the invoice as the API shows it after the change, written in the change's transaction, so
 * that a webhook goes out if and only if the change commits.
 */
async function emitInvoiceEvent(trx: Knex, invoice: InvoiceRow, type: DomainEventType & `invoice.${string}`): Promise<void> {
  const current = (await invoicesIn(trx).find(invoice.organisation_id, invoice.id))!;
  await recordEvent(trx, invoice.organisation_id, domainEvent(type, current));
}

/**
 * The steps of the invoice workflow. Each step is one transaction keyed by (invoice, seq): guard, lock,
 * transition. A retry after a commit finds its transition row and returns without writing; each undo marks
 * the row and is a no-op twice.
 */
export function createInvoiceLifecycleService(deps: { db: Knex; mailer: Mailer; templates: TemplateRenderer }) {
  const { db, mailer, templates } = deps;

  /**
   * Locks the invoice and hands `work` the step, with the transition already recorded for it, if any. A
   * step that changes what the contract's usage windows hold (a cancellation and its undo) takes the
   * contract's row lock first, in the order runs and credit notes take them, so that neither passes it.
   */
  function inStep<R>(input: StepInput, work: (step: Step, done: TransitionRow | undefined) => Promise<R>, options: StepOptions = {}): Promise<R> {
    return db.transaction(async (trx) => {
      const repositories = repositoriesOf(trx);
      if (options.contractFirst) {
        const contractId = (await repositories.invoices.findRow(input.organisationId, input.invoiceId))?.contract_id;
        if (contractId) await contractsIn(trx).lockMany(input.organisationId, [contractId]);
      }
      const invoice = orNotFound(await repositories.invoices.lock(input.organisationId, input.invoiceId), 'Invoice');
      const setStatus = async (change: InvoiceStatusChange) => {
        await repositories.invoices.setStatus(invoice.id, change);
        await syncInvoiceRevenue(trx, invoice, change.status);
      };
      const step: Step = {
        ...repositories,
        trx,
        invoice,
        setStatus,
        async complete(name, change, data) {
          await setStatus({ status: targetOf(name), ...change });
          await repositories.invoices.recordTransition({ ...input, step: name, to: targetOf(name), data });
          await emitInvoiceEvent(trx, invoice, `invoice.${targetOf(name)}`);
        },
      };
      return work(step, await repositories.invoices.findTransition(input.invoiceId, input.seq));
    });
  }

  /**
   * Guard: a step not yet recorded runs only from the state the workflow planned it from. A workflow that
   * gave up on a step which had in fact committed must not run it again under a new seq (a second payment).
   */
  function assertFrom(invoice: InvoiceRow, input: StepInput): void {
    if (invoice.status !== input.from) throw AppError.conflict(`the invoice is ${invoice.status}, not ${input.from}`);
  }

  /**
   * Whether the step's transition is recorded already: a retry of this very step. Under its seq, another
   * step's transition, or one undone since, means the workflow's plan fell behind Postgres (it was reset
   * to an earlier point): refused as a conflict, so that it reloads the state and plans again.
   */
  function recordedAs(name: InvoiceStep, input: StepInput, done: TransitionRow | undefined): boolean {
    if (!done) return false;
    if (done.step !== name || done.undone_at) {
      throw AppError.conflict(`the invoice's transition ${input.seq} is ${done.undone_at ? 'an undone ' : 'its '}${done.step}, not this ${name}: the workflow is behind the database`);
    }
    return true;
  }

  /** A step that runs once: a retry gets `replay` of the invoice instead. */
  const once =
    <I extends StepInput, R>(name: InvoiceStep, work: (step: Step, input: I) => Promise<R>, replay: (invoice: InvoiceRow) => R, options: StepOptions = {}) =>
    (input: I): Promise<R> =>
      inStep(
        input,
        async (step, done) => {
          if (recordedAs(name, input, done)) return replay(step.invoice);
          assertFrom(step.invoice, input);
          return work(step, input);
        },
        options,
      );

  /**
   * The undo of a step: runs only if the step committed and was not undone yet. The step must be the
   * invoice's latest standing transition: a later one means the workflow's stack fell behind Postgres,
   * refused as a conflict so that it reloads and undoes what the database holds last.
   */
  const undo =
    (work: (step: Step, transition: TransitionRow) => Promise<void>, options: StepOptions = {}) =>
    (input: StepInput): Promise<void> =>
      inStep(
        input,
        async (step, done) => {
          if (!done) return;
          const latest = (await step.invoices.transitions(input.invoiceId)).filter((transition) => transition.undone_at === null).at(-1);
          if (latest && latest.seq > input.seq) {
            throw AppError.conflict(`the invoice's latest transition is ${latest.seq}, its ${latest.step}, not ${input.seq}: the workflow is behind the database`);
          }
          if (done.undone_at) return;
          await work(step, done);
          await step.invoices.markTransitionUndone(input.invoiceId, input.seq);
          await emitInvoiceEvent(step.trx, step.invoice, 'invoice.transition_undone');
        },
        options,
      );

  /** The invoice's number: kept from an earlier raise, else the next of the gapless series. */
  async function numberOf({ trx, invoices, invoice }: Step): Promise<{ number: string; number_sequence: number }> {
    if (invoice.number) return { number: invoice.number, number_sequence: invoice.number_sequence! };
    const sequence = await invoices.takeNextNumber(invoice.organisation_id);
    const { invoice_number_format: format } = await getOrganisationSettings(trx, invoice.organisation_id);
    return { number: formatInvoiceNumber(format, sequence, calendarDay(invoice.date)), number_sequence: sequence };
  }

  /**
   * The payment a gateway collected (docs/payments.md): the attempt's amount as the invoice's payment, keyed
   * by the gateway's payment, so that the webhook and the collection workflow racing to record it make one.
   */
  async function payCollected(step: Step, attemptId: string, paidDate: string, paidAt: string | Date): Promise<void> {
    const { invoice } = step;
    const attempt = await step.payments.collectedAttempt(invoice.organisation_id, attemptId);
    if (!attempt || attempt.invoice_id !== invoice.id) throw AppError.notFound('Payment attempt');
    if (attempt.status !== 'succeeded' || !attempt.provider_payment_id) throw AppError.conflict(`payment attempt ${attemptId} is ${attempt.status}: only a succeeded one pays the invoice`);
    if (attempt.payment_id) throw AppError.conflict(`payment attempt ${attemptId} is already recorded as payment ${attempt.payment_id}`);
    const payment = await step.payments.insert(invoice.organisation_id, {
      customerId: attempt.customer_id,
      invoiceId: invoice.id,
      amount: attempt.amount,
      currency: attempt.currency,
      paidAt,
      method: attempt.provider,
      reference: attempt.provider_payment_id,
      idempotency: { scope: 'system', key: `gateway:${attempt.provider}:${attempt.provider_payment_id}`, fingerprint: null },
    });
    await step.payments.linkAttemptPayment(attempt.id, payment.id);
    await step.complete('pay', { paid_date: paidDate, stamp: 'paid_at' }, { paymentId: payment.id, collectedAttemptId: attempt.id });
  }

  /**
   * A payment recorded against the invoice (`POST /payments`: a bank transfer, part of it or all) is the
   * customer's money: the invoice cannot stop counting under it. `except`: the payment the step itself
   * reverses (a mark-paid's, by cancelling the paid invoice).
   */
  async function assertNoRecordedPayments(step: Step, what: string, except?: string): Promise<void> {
    const recorded = (await step.payments.listOfInvoice(step.invoice.organisation_id, step.invoice.id)).filter((payment) => payment.credit_note_id === null && payment.id !== except);
    if (recorded.length > 0) {
      const [first] = recorded;
      throw AppError.conflict(`${recorded.length === 1 ? `payment ${first!.id} is` : `${recorded.length} payments (${recorded.map((payment) => payment.id).join(', ')}) are`} recorded against the invoice; you cannot ${what}: delete ${recorded.length === 1 ? 'it' : 'them'} first (DELETE /payments/{id}), or credit the invoice`);
    }
  }

  /** Money a gateway took goes back through a refund (a credit note with `refund: true`), never by undoing its record. */
  async function assertNotCollected(step: Step, paymentId: string, what: string): Promise<void> {
    const attempt = await step.payments.gatewayAttemptOf(paymentId);
    if (attempt) throw AppError.conflict(`the payment was collected through ${attempt.provider} (${attempt.provider_payment_id}); you cannot ${what}: refund it with a credit note instead`);
  }

  /** Takes what the customer's credit balance holds, up to `most`, for the invoice; returns the amount taken. */
  async function consumeCredits({ trx, invoices, invoice }: Step, most: string, reason: string): Promise<string> {
    if (!invoice.customer_id) return '0';
    const taken = await creditsIn(trx).consume({ organisationId: invoice.organisation_id, customerId: invoice.customer_id, currency: invoice.currency, most, reason, invoiceId: invoice.id });
    await invoices.setCreditsApplied(invoice.id, taken);
    return taken;
  }

  /**
   * A total below zero owes nothing: what is below zero goes to the customer's credit balance (an
   * `adjustment` entry, a lot of its own that never expires). An invoice without a customer has no balance
   * to take it: 409. Returns the amount and the entry, or nothing when the total is zero or more.
   */
  async function creditBelowZero({ trx, invoices, invoice }: Step, total: string, reason: string): Promise<{ creditedToBalance: string; creditedToBalanceEntryId: string } | undefined> {
    const below = new Decimal(total).negated();
    if (below.lessThanOrEqualTo(0)) return undefined;
    if (!invoice.customer_id) throw AppError.conflict(`the invoice's total is ${total} ${invoice.currency}, below zero, and it has no customer whose credit balance could take it; give it a customer, or credit through a credit note`);
    const entry = await creditsIn(trx).append({ organisationId: invoice.organisation_id, customerId: invoice.customer_id, currency: invoice.currency, kind: 'adjustment', amount: below.toFixed(), reason, invoiceId: invoice.id });
    await invoices.setCreditedToBalance(invoice.id, below.toFixed());
    return { creditedToBalance: below.toFixed(), creditedToBalanceEntryId: entry.id };
  }

  /**
   * Takes back from the balance what the invoice's total below zero put there (409 when the customer has
   * spent it meanwhile), from the lot it went to first. Returns the amount, if there was any.
   */
  async function takeBackBelowZero({ trx, invoices, invoice }: Step, entryId: string | undefined, reason: string): Promise<string | undefined> {
    const amount = new Decimal(invoice.credited_to_balance);
    if (!invoice.customer_id || amount.lessThanOrEqualTo(0)) return undefined;
    await creditsIn(trx).append({
      organisationId: invoice.organisation_id,
      customerId: invoice.customer_id,
      currency: invoice.currency,
      kind: 'adjustment',
      amount: amount.negated().toFixed(),
      reason,
      invoiceId: invoice.id,
      ...(entryId ? { reverses: { entryId } } : {}),
    });
    await invoices.setCreditedToBalance(invoice.id, '0');
    return amount.toFixed();
  }

  /** The entry by which the standing raise put the invoice's total below zero on the balance, if it did. */
  async function belowZeroEntryOf({ invoices, invoice }: Step): Promise<string | undefined> {
    const raises = (await invoices.transitions(invoice.id)).filter((transition) => transition.step === 'raise' && !transition.undone_at);
    return raises.at(-1)?.data.creditedToBalanceEntryId;
  }

  /** Gives credit an invoice consumed back to the customer's balance, to the lots it came from (keeping their expiry). */
  async function returnCredits({ trx, invoices, invoice }: Step, amount: string | undefined, reason: string): Promise<string | undefined> {
    if (!invoice.customer_id || amount === undefined || new Decimal(amount).lessThanOrEqualTo(0)) return undefined;
    const entry = await creditsIn(trx).giveBack({ organisationId: invoice.organisation_id, customerId: invoice.customer_id, currency: invoice.currency, amount, reason, invoiceId: invoice.id });
    await invoices.setCreditsApplied(invoice.id, '0');
    return entry.id;
  }

  /** Days from the invoice's date to its due date: the customer's terms, else the organisation's. */
  async function paymentTermsOf({ trx, invoice }: Step): Promise<number> {
    const customer = invoice.customer_id ? await customersIn(trx).findAnyById(invoice.organisation_id, invoice.customer_id) : undefined;
    return customer?.payment_terms_days ?? (await getOrganisationSettings(trx, invoice.organisation_id)).payment_terms_days;
  }

  /** The payment terms that date the invoice's due date, which must fall within the years the API writes. */
  async function dueInDaysOf(step: Step): Promise<number> {
    const terms = await paymentTermsOf(step);
    const date = calendarDay(step.invoice.date);
    if (date > addDays('9999-12-31', -terms)) {
      throw AppError.conflict(`its due date, ${terms} days after its date ${date}, would fall after 9999-12-31, the last day the API writes: date the invoice earlier`);
    }
    return terms;
  }

  /** Invoices go to every contact in the customer's contact groups. */
  async function recipientsOf(organisationId: string, invoiceId: string): Promise<string[]> {
    const invoice = await invoicesIn(db).findRow(organisationId, invoiceId);
    return invoice?.customer_id ? contactGroupsIn(db).emailsOfCustomer(organisationId, invoice.customer_id) : [];
  }

  return {
    /** What Postgres records of the invoice's lifecycle, for a workflow whose own memory fell behind (a reset). */
    async snapshot(input: { organisationId: string; invoiceId: string }): Promise<LifecycleSnapshot> {
      const row = orNotFound(await invoicesIn(db).findRow(input.organisationId, input.invoiceId), 'Invoice');
      return lifecycleSnapshot(db, row);
    },

    /**
     * Number, locked items, totals in both currencies, due date, and the customer's credit balance in the
     * invoice's currency applied to what it owes.
     */
    raise: once<StepInput, { number: string }>(
      'raise',
      async (step) => {
        const numbering = await numberOf(step);
        const totals = await computeInvoiceTotals(step.trx, step.invoice);
        const creditsApplied = await consumeCredits(step, totals.total, `invoice ${numbering.number}`);
        const credited = await creditBelowZero(step, totals.total, `invoice ${numbering.number}: total below zero`);
        await step.complete('raise', { ...numbering, stamp: 'raised_at', totals, due_in_days: await dueInDaysOf(step) }, { creditsApplied, ...credited });
        return { number: numbering.number };
      },
      (invoice) => ({ number: invoice.number! }),
    ),
    unraise: undo(async (step, transition) => {
      await assertNoCreditNotes(step, 'undo its raise');
      await assertNoPlanChangeCredits(step, 'undo its raise');
      await assertNoRecordedPayments(step, 'undo its raise');
      await returnCredits(step, transition.data.creditsApplied, `raise of invoice ${step.invoice.number} undone`);
      await takeBackBelowZero(step, transition.data.creditedToBalanceEntryId, `raise of invoice ${step.invoice.number} undone`);
      await step.setStatus({ status: transition.from_state, clear: 'raised_at', due_in_days: null });
    }),

    /**
     * Renders the PDF and e-mails it, with the organisation's invoice template (else the built-in message),
     * to every contact of the customer's contact groups, then records the
     * transition. Delivery is at least once: a crash between the e-mail and the commit sends again, with
     * the same Message-ID so that mail systems can fold the copies.
     */
    async send(input: StepInput): Promise<void> {
      if (recordedAs('send', input, await invoicesIn(db).findTransition(input.invoiceId, input.seq))) return;
      assertFrom(orNotFound(await invoicesIn(db).findRow(input.organisationId, input.invoiceId), 'Invoice'), input);
      // The document that goes out is the sent invoice: its PDF says so, as the invoice will once this commits.
      const document = { ...(await loadInvoiceDocument(db, input.organisationId, input.invoiceId, invoiceSettlements)), status: 'sent' as const };
      const recipients = await recipientsOf(input.organisationId, input.invoiceId);
      const messageId = `<invoice-${input.invoiceId}-${input.seq}@billing>`;
      if (recipients.length > 0) {
        const message = await renderTemplateOfKind(db, templates, input.organisationId, 'invoice', invoiceMailVariables(document));
        await mailWithPdf(mailer, { to: recipients, message, document, id: input.invoiceId, messageId });
      }
      await inStep(input, async (step, done) => {
        if (recordedAs('send', input, done)) return;
        assertFrom(step.invoice, input);
        const delivery = { sentTo: recipients, messageId };
        await step.complete('send', { stamp: 'sent_at', delivery }, delivery);
      });
    },
    unsend: undo((step, transition) => step.setStatus({ status: transition.from_state, clear: 'sent_at' })),

    /**
     * Records the payment of what the invoice leaves owing (its total less the customer's credit, the credit
     * notes that lowered it and the payments already recorded against it in its currency, part payments),
     * keyed so that it is made once per transition; nothing is recorded when nothing is owed.
     */
    pay: once<PayInput, void>(
      'pay',
      async (step, input) => {
        const { invoice } = step;
        if (!invoice.customer_id || invoice.total === null) throw AppError.conflict('Invoice has no customer or total to pay');
        const paidBefore = await step.payments.paidTowards(invoice.organisation_id, invoice.id, invoice.currency);
        const owed = new Decimal(invoice.total).plus(invoice.credited_to_balance).minus(invoice.credits_applied).minus(invoice.credited_due).minus(paidBefore);
        // A date is the paid day, paid at its start; a date-time is the instant, paid on its day. Both in the
        // customer's zone, else the organisation's.
        const zone = await zoneOf(step.trx, invoice.organisation_id, await customerZone(step.trx, invoice.organisation_id, invoice.customer_id));
        const paidDate = isDateOnly(input.paidDate) ? input.paidDate : dayIn(zone, new Date(input.paidDate));
        const paidAt = isDateOnly(input.paidDate) ? startOfDayIn(input.paidDate, zone) : input.paidDate;
        if (input.collectedAttemptId) {
          await payCollected(step, input.collectedAttemptId, paidDate, paidAt);
          return;
        }
        // A gateway's charge under way or taken pays the invoice itself: a payment recorded by hand beside it
        // would have the customer pay twice.
        const collecting = await step.payments.collectingAttempt(invoice.id);
        if (collecting) {
          throw AppError.conflict(
            `${collecting.provider} is collecting the invoice (attempt ${collecting.attempt}, ${collecting.status === 'processing' ? 'processing' : 'taken, being recorded'}): it is paid when that settles; mark it paid by hand only if the attempt fails`,
          );
        }
        if (owed.lessThanOrEqualTo(0)) {
          await step.complete('pay', { paid_date: paidDate, stamp: 'paid_at' }, {});
          return;
        }
        const payment = await step.payments.insert(invoice.organisation_id, {
          customerId: invoice.customer_id,
          invoiceId: invoice.id,
          amount: owed.toFixed(),
          currency: invoice.currency,
          paidAt,
          method: 'invoice',
          reference: null,
          idempotency: { scope: 'system', key: markPaidPaymentKey(invoice.id, input.seq), fingerprint: null },
        });
        await step.complete('pay', { paid_date: paidDate, stamp: 'paid_at' }, { paymentId: payment.id });
      },
      () => undefined,
    ),
    unpay: undo(async (step, transition) => {
      await assertNoCreditNotes(step, 'undo its payment', ['refund', 'balance']);
      if (transition.data.paymentId) await assertNotCollected(step, transition.data.paymentId, 'undo its payment');
      if (transition.data.paymentId) await step.payments.setDeleted(transition.data.paymentId, true);
      await step.setStatus({ status: transition.from_state, paid_date: null, clear: 'paid_at' });
    }),

    /**
     * From any state; the payment that marking a paid invoice paid recorded is reversed with it. Any other
     * payment (one recorded with POST /payments, which left mark-paid nothing to record) holds the invoice: 409.
     */
    cancel: once<CancelInput, void>(
      'cancel',
      async (step, input) => {
        const { invoice } = step;
        await assertNoCreditNotes(step, 'cancel it');
        await assertNoPlanChangeCredits(step, 'cancel it', true);
        const paid = invoice.status === 'paid' ? (await step.invoices.transitions(invoice.id)).filter((transition) => transition.step === 'pay' && transition.undone_at === null).at(-1) : undefined;
        const payment = paid?.data.paymentId ? { id: paid.data.paymentId } : undefined;
        if (payment) await assertNotCollected(step, payment.id, 'cancel it');
        await assertNoRecordedPayments(step, 'cancel it', payment?.id);
        if (payment) await step.payments.setDeleted(payment.id, true);
        const creditsReturned = invoice.credits_applied;
        const creditsReturnedEntryId = await returnCredits(step, creditsReturned, `invoice ${invoice.number} cancelled`);
        const creditTakenBack = await takeBackBelowZero(step, await belowZeroEntryOf(step), `invoice ${invoice.number} cancelled`);
        const comments = input.comments !== undefined ? { comments: input.comments } : {};
        await step.complete(
          'cancel',
          { stamp: 'cancelled_at', ...comments },
          { ...(payment ? { reversedPaymentId: payment.id } : {}), creditsReturned, ...(creditsReturnedEntryId ? { creditsReturnedEntryId } : {}), ...(creditTakenBack ? { creditTakenBack } : {}) },
        );
      },
      () => undefined,
      { contractFirst: true },
    ),
    uncancel: undo(async (step, transition) => {
      // A plan change made while it was cancelled left its fees out: restored, they would charge days the new plan bills.
      const since = step.invoice.contract_plan_id ? await planChangesIn(step.trx).standingFrom(step.invoice.contract_plan_id) : [];
      const overlapping = since.find((change) => calendarDay(change.effective_date) <= calendarDay(step.invoice.to_date ?? step.invoice.date));
      if (overlapping) throw AppError.conflict(`plan change ${overlapping.id} took the plan over from ${calendarDay(overlapping.effective_date)}: the invoice's fees cannot come back`);
      // Nor may its corrections give usage back that a credit note gave back while it was cancelled.
      const beyond = await correctionBeyondHeld(step.trx, step.invoice);
      if (beyond) {
        throw AppError.conflict(
          `its correction of the usage of ${beyond.from} to ${beyond.to} gives back ${formatAmount(beyond.givesBack, step.invoice.currency)} ${step.invoice.currency}, more than that usage holds now (${formatAmount(beyond.holds, step.invoice.currency)}): a credit note gave it back since; void that note first`,
        );
      }
      if (transition.data.reversedPaymentId) await step.payments.setDeleted(transition.data.reversedPaymentId, false);
      // The credit it gave back is taken again, all of it (409 if the customer has spent it meanwhile).
      const returned = transition.data.creditsReturned;
      if (step.invoice.customer_id && returned !== undefined && new Decimal(returned).greaterThan(0)) {
        const { organisation_id: organisationId, customer_id: customerId, currency, id: invoiceId } = step.invoice;
        await creditsIn(step.trx).append({
          organisationId,
          customerId,
          currency,
          kind: 'consumption',
          amount: new Decimal(returned).negated().toFixed(),
          reason: `invoice ${step.invoice.number} restored`,
          invoiceId,
          // From the lots the cancellation gave the credit back to.
          ...(transition.data.creditsReturnedEntryId ? { reverses: { entryId: transition.data.creditsReturnedEntryId } } : {}),
        });
        await step.invoices.setCreditsApplied(invoiceId, returned);
      }
      // What its total below zero put on the balance goes there again.
      const takenBack = transition.data.creditTakenBack;
      if (takenBack !== undefined) await creditBelowZero(step, new Decimal(takenBack).negated().toFixed(), `invoice ${step.invoice.number} restored: total below zero`);
      await step.setStatus({ status: transition.from_state, clear: 'cancelled_at' });
    }, { contractFirst: true }),
  };
}

export type InvoiceLifecycleService = ReturnType<typeof createInvoiceLifecycleService>;
