import type { Knex } from 'knex';
import { calendarDay } from '../src/db/dates';
import { newId } from '../src/db/ids';
import { formatInvoiceNumber } from '../src/domain/invoice-number';
import { getOrganisationSettings } from '../src/modules/organisation-settings/settings.repository';
import type { InvoiceState, InvoiceStep } from '../src/domain/invoice-state';
import type { CancelInput, PayInput, StepInput } from '../workflows/invoice-lifecycle.types';
import { AppError } from '../src/domain/errors';
import { withHeartbeat } from './adapter';
import { syncInvoiceRevenue } from './revenue-sync';
import { computeInvoiceTotals } from './invoice-totals';
import type { Mailer } from '../src/mail/mailer';
import { loadInvoiceDocument } from '../src/modules/invoices/invoice-document';
import { renderInvoicePdf } from '../src/modules/invoices/invoice-pdf';

/** Invoices go to every contact in the customer's contact groups. */
async function recipientsOf(db: Knex, organisationId: string, customerId: string): Promise<string[]> {
  const rows = await db('contacts as c')
    .join('contact_groups as g', 'g.id', 'c.contact_group_id')
    .where({ 'g.organisation_id': organisationId, 'g.customer_id': customerId })
    .distinct<{ email: string }[]>('c.email')
    .orderBy('c.email');
  return rows.map((row) => row.email);
}

const NUMBER_SERIES = 'default';

interface InvoiceRow {
  id: string;
  organisation_id: string;
  customer_id: string | null;
  status: InvoiceState;
  number: string | null;
  number_sequence: number | null;
  currency: string;
  date: Date;
  from_date: Date | null;
  to_date: Date | null;
  contract_id: string | null;
  total: string | null;
}

interface TransitionRow {
  seq: number;
  step: InvoiceStep;
  from_state: InvoiceState;
  data: { paymentId?: string; reversedPaymentId?: string };
  undone_at: Date | null;
}

async function lockInvoice(trx: Knex.Transaction, input: StepInput): Promise<InvoiceRow> {
  const invoice = await trx<InvoiceRow>('invoices')
    .where({ organisation_id: input.organisationId, id: input.invoiceId })
    .whereNull('deleted_at')
    .forUpdate()
    .first();
  if (!invoice) throw new AppError('not_found', 'Invoice not found');
  return invoice;
}

async function findTransition(trx: Knex.Transaction, input: StepInput): Promise<TransitionRow | undefined> {
  return trx('invoice_transitions').where({ invoice_id: input.invoiceId, seq: input.seq }).first<TransitionRow | undefined>();
}

async function recordTransition(trx: Knex.Transaction, input: StepInput, step: InvoiceStep, to: InvoiceState, data: object = {}): Promise<void> {
  await trx('invoice_transitions').insert({
    id: newId('itr'),
    organisation_id: input.organisationId,
    invoice_id: input.invoiceId,
    seq: input.seq,
    step,
    from_state: input.from,
    to_state: to,
    data: JSON.stringify(data),
  });
}

/** Gapless: the counter row is locked in the raise's own transaction, so a rolled-back raise takes no number. */
async function takeNextNumber(trx: Knex.Transaction, organisationId: string): Promise<number> {
  await trx('invoice_number_counters').insert({ organisation_id: organisationId, series: NUMBER_SERIES, last_number: 0 }).onConflict(['organisation_id', 'series']).ignore();
  const [row] = await trx('invoice_number_counters')
    .where({ organisation_id: organisationId, series: NUMBER_SERIES })
    .increment('last_number', 1)
    .returning<{ last_number: number }[]>('last_number');
  return row!.last_number;
}

/**
 * Each step is one transaction keyed by (invoice, seq): guard, lock, transition. A retry after a commit
 * finds its transition row and returns without writing; each undo marks the row and is a no-op twice.
 */
export function createInvoiceActivities(deps: { db: Knex; mailer: Mailer }) {
  const { db, mailer } = deps;
  const step = <I extends StepInput, R>(work: (trx: Knex.Transaction, invoice: InvoiceRow, input: I) => Promise<R>, replay: (invoice: InvoiceRow) => R) =>
    (input: I): Promise<R> =>
      withHeartbeat(() =>
        db.transaction(async (trx) => {
          const invoice = await lockInvoice(trx, input);
          if (await findTransition(trx, input)) return replay(invoice);
          return work(trx, invoice, input);
        }),
      );

  const undo = (work: (trx: Knex.Transaction, invoice: InvoiceRow, transition: TransitionRow, input: StepInput) => Promise<void>) =>
    (input: StepInput): Promise<void> =>
      withHeartbeat(() =>
        db.transaction(async (trx) => {
          const invoice = await lockInvoice(trx, input);
          const transition = await findTransition(trx, input);
          if (!transition || transition.undone_at) return;
          await work(trx, invoice, transition, input);
          await trx('invoice_transitions').where({ invoice_id: input.invoiceId, seq: input.seq }).update({ undone_at: trx.fn.now() });
        }),
      );

  /** Every status change carries the invoice's revenue records along in the same transaction. */
  const setStatus = async (trx: Knex.Transaction, invoice: InvoiceRow, changes: Record<string, unknown> & { status: InvoiceState }) => {
    await trx('invoices').where({ id: invoice.id }).update({ ...changes, updated_at: trx.fn.now() });
    await syncInvoiceRevenue(trx, invoice, changes.status);
  };

  return {
    /** Number (kept from an earlier raise if there was one), locked items, totals in both currencies. */
    raiseInvoice: step<StepInput, { number: string }>(
      async (trx, invoice, input) => {
        let number = invoice.number;
        let sequence = invoice.number_sequence;
        if (!number) {
          sequence = await takeNextNumber(trx, invoice.organisation_id);
          number = formatInvoiceNumber((await getOrganisationSettings(trx, invoice.organisation_id)).invoice_number_format, sequence, calendarDay(invoice.date));
        }
        const totals = await computeInvoiceTotals(trx, invoice);
        await setStatus(trx, invoice, { status: 'raised', number, number_sequence: sequence, raised_at: trx.fn.now(), ...totals });
        await recordTransition(trx, input, 'raise', 'raised');
        return { number };
      },
      (invoice) => ({ number: invoice.number! }),
    ),
    unraiseInvoice: undo(async (trx, invoice, transition) => {
      await setStatus(trx, invoice, { status: transition.from_state, raised_at: null });
    }),

    /**
     * Renders the PDF and e-mails it to every contact of the customer's contact groups, then records the
     * transition. Delivery is at least once: a crash between the e-mail and the commit sends again, with
     * the same Message-ID so that mail systems can fold the copies.
     */
    async sendInvoice(input: StepInput): Promise<void> {
      const sent = await db('invoice_transitions').where({ invoice_id: input.invoiceId, seq: input.seq }).first('seq');
      if (sent) return;
      const document = await loadInvoiceDocument(db, input.organisationId, input.invoiceId);
      if (!document) throw new AppError('not_found', 'Invoice not found');
      const invoice = await db('invoices').where({ id: input.invoiceId }).first<{ customer_id: string | null }>('customer_id');
      const recipients = invoice?.customer_id ? await recipientsOf(db, input.organisationId, invoice.customer_id) : [];
      const messageId = `<invoice-${input.invoiceId}-${input.seq}@billing>`;
      if (recipients.length > 0) {
        await mailer.send({
          to: recipients,
          subject: `Invoice ${document.number} from ${document.seller?.name ?? 'us'}`,
          text: `Please find invoice ${document.number} attached: ${document.total} ${document.currency} for ${document.fromDate ?? document.date} to ${document.toDate ?? document.date}.`,
          attachments: [{ filename: `${document.number}.pdf`, content: await renderInvoicePdf(document), contentType: 'application/pdf' }],
          messageId,
        });
      }
      await withHeartbeat(() =>
        db.transaction(async (trx) => {
          const row = await lockInvoice(trx, input);
          if (await findTransition(trx, input)) return;
          const delivery = { sentTo: recipients, messageId };
          await setStatus(trx, row, { status: 'sent', sent_at: trx.fn.now(), data: trx.raw("data || jsonb_build_object('delivery', ?::jsonb)", [JSON.stringify(delivery)]) });
          await recordTransition(trx, input, 'send', 'sent', delivery);
        }),
      );
    },
    unsendInvoice: undo(async (trx, invoice, transition) => {
      await setStatus(trx, invoice, { status: transition.from_state, sent_at: null });
    }),

    /** Records the payment of the invoice's total, keyed so that it is made once per transition. */
    payInvoice: step<PayInput, void>(
      async (trx, invoice, input) => {
        if (!invoice.customer_id || invoice.total === null) throw new AppError('conflict', 'Invoice has no customer or total to pay');
        const paymentId = newId('pay');
        await trx('payments').insert({
          id: paymentId,
          organisation_id: invoice.organisation_id,
          customer_id: invoice.customer_id,
          invoice_id: invoice.id,
          amount: invoice.total,
          currency: invoice.currency,
          paid_at: input.paidDate,
          method: 'invoice',
          idempotency_key: `invoice:${invoice.id}:${input.seq}`,
        });
        await setStatus(trx, invoice, { status: 'paid', paid_date: input.paidDate.slice(0, 10), paid_at: trx.fn.now() });
        await recordTransition(trx, input, 'pay', 'paid', { paymentId });
      },
      () => undefined,
    ),
    unpayInvoice: undo(async (trx, invoice, transition) => {
      await trx('payments').where({ id: transition.data.paymentId }).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
      await setStatus(trx, invoice, { status: transition.from_state, paid_date: null, paid_at: null });
    }),

    /** From any state; a paid invoice's payment is reversed with it. */
    cancelInvoice: step<CancelInput, void>(
      async (trx, invoice, input) => {
        const payment = invoice.status === 'paid'
          ? await trx('payments').where({ organisation_id: invoice.organisation_id, invoice_id: invoice.id }).whereNull('deleted_at').first('id')
          : undefined;
        if (payment) await trx('payments').where({ id: payment.id }).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
        await setStatus(trx, invoice, { status: 'cancelled', cancelled_at: trx.fn.now(), ...(input.comments !== undefined ? { comments: input.comments } : {}) });
        await recordTransition(trx, input, 'cancel', 'cancelled', payment ? { reversedPaymentId: payment.id } : {});
      },
      () => undefined,
    ),
    uncancelInvoice: undo(async (trx, invoice, transition) => {
      if (transition.data.reversedPaymentId) {
        await trx('payments').where({ id: transition.data.reversedPaymentId }).update({ deleted_at: null, updated_at: trx.fn.now() });
      }
      await setStatus(trx, invoice, { status: transition.from_state, cancelled_at: null });
    }),
  };
}

export type InvoiceActivities = ReturnType<typeof createInvoiceActivities>;
