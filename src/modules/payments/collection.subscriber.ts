import type { Knex } from 'knex';
import type { EventSubscriber } from '../../events/relay';
import type { OutboxEvent } from '../../events/outbox';
import type { TemporalHandle } from '../../temporal/client';
import { gatewayRefundWorkflowId, invoiceCollectionWorkflowId, searchAttributes } from '../../../workflows/ids';
import type { RefundRequest } from '../../../workflows/gateway-refund.types';
import { collectionNudge } from '../../../workflows/invoice-collection.types';

/** Starts the invoice's collection workflow, or tells the running one to look again (it decides from Postgres). */
export async function nudgeCollection(temporal: TemporalHandle, organisationId: string, invoiceId: string): Promise<void> {
  await temporal.bounded(() =>
    temporal.workflows.signalWithStart('invoiceCollectionWorkflow', {
      workflowId: invoiceCollectionWorkflowId(invoiceId),
      args: [{ organisationId, invoiceId }],
      signal: collectionNudge,
      signalArgs: [],
      ...searchAttributes({ organisationId }),
    }),
  );
}

/** Starts the credit note's refund through the gateway; a repeat finds the one started, or the refund recorded. */
async function startRefund(temporal: TemporalHandle, request: RefundRequest): Promise<void> {
  await temporal.bounded(() =>
    temporal.workflows.start('gatewayRefundWorkflow', {
      workflowId: gatewayRefundWorkflowId(request.creditNoteId),
      args: [request],
      workflowIdConflictPolicy: 'USE_EXISTING',
      ...searchAttributes({ organisationId: request.organisationId }),
    }),
  );
}

interface CreditNoteEventData {
  id: string;
  invoiceId: string;
  total: string;
  currency: string;
  settlement: string | null;
}

interface InvoiceEventData {
  id: string;
  customerId?: string | null;
  status?: string;
}

/**
 * Collection as a subscriber of the domain events: an invoice raised (or sent, as the organisation's
 * gateway setting says) for a customer linked to the organisation's gateway gets its collection workflow;
 * an invoice with attempts that is paid, cancelled or undone nudges it, so that a dunning wait ends at once;
 * an undo that leaves a linked customer's invoice raised (or sent) where collection begins starts it too.
 * Found set-based, one statement per relay batch; safe to repeat, as the workflow decides from Postgres.
 */
export function collectionSubscriber(deps: { temporal: TemporalHandle }): EventSubscriber {
  return {
    name: 'collection',
    handle: async (trx: Knex.Transaction, events: readonly OutboxEvent[]) => {
      const interesting = events.filter((event) => ['invoice.raised', 'invoice.sent', 'invoice.paid', 'invoice.cancelled', 'invoice.transition_undone'].includes(event.type));
      if (interesting.length === 0) return;
      const rows = interesting.map((event) => {
        const data = event.payload.data as InvoiceEventData;
        return { organisationId: event.organisation_id, type: event.type, invoiceId: data.id, customerId: data.customerId ?? null, status: data.status ?? null };
      });
      const { rows: due } = await trx.raw<{ rows: Array<{ organisation_id: string; invoice_id: string }> }>(
        `SELECT DISTINCT e.organisation_id, e.invoice_id
           FROM jsonb_to_recordset(?::jsonb) AS e(organisation_id text, type text, invoice_id text, customer_id text, status text)
          WHERE (e.type IN ('invoice.raised', 'invoice.sent')
                 AND EXISTS (SELECT 1 FROM payment_provider_accounts a
                              WHERE a.organisation_id = e.organisation_id AND 'invoice.' || a.collect_on = e.type)
                 AND EXISTS (SELECT 1 FROM customer_payment_providers l
                              WHERE l.organisation_id = e.organisation_id AND l.customer_id = e.customer_id))
             -- An undo that leaves it owing where collection would have begun (a manual mark-paid undone).
             OR (e.type = 'invoice.transition_undone'
                 AND EXISTS (SELECT 1 FROM payment_provider_accounts a
                              WHERE a.organisation_id = e.organisation_id
                                AND (e.status = 'sent' OR (e.status = 'raised' AND a.collect_on = 'raised')))
                 AND EXISTS (SELECT 1 FROM customer_payment_providers l
                              WHERE l.organisation_id = e.organisation_id AND l.customer_id = e.customer_id))
             OR (e.type IN ('invoice.paid', 'invoice.cancelled', 'invoice.transition_undone')
                 AND EXISTS (SELECT 1 FROM payment_attempts p WHERE p.invoice_id = e.invoice_id))`,
        [JSON.stringify(rows.map((row) => ({ organisation_id: row.organisationId, type: row.type, invoice_id: row.invoiceId, customer_id: row.customerId, status: row.status })))],
      );
      for (const row of due) await nudgeCollection(deps.temporal, row.organisation_id, row.invoice_id);
    },
  };
}

/**
 * Refunds as a subscriber of the domain events: a credit note issued as a refund (`settlement: refund`) of
 * an invoice that a gateway collected gets its refund workflow, which pays it back through the gateway.
 */
export function refundSubscriber(deps: { temporal: TemporalHandle }): EventSubscriber {
  return {
    name: 'gateway-refunds',
    handle: async (trx: Knex.Transaction, events: readonly OutboxEvent[]) => {
      const refunds = events
        .filter((event) => event.type === 'credit_note.issued' && (event.payload.data as CreditNoteEventData).settlement === 'refund')
        .map((event) => ({ organisationId: event.organisation_id, note: event.payload.data as CreditNoteEventData }));
      if (refunds.length === 0) return;
      const collected = new Set(
        await trx('payment_attempts')
          .whereIn('invoice_id', refunds.map((refund) => refund.note.invoiceId))
          .whereNotNull('payment_id')
          .pluck('invoice_id'),
      );
      for (const { organisationId, note } of refunds) {
        if (!collected.has(note.invoiceId)) continue;
        await startRefund(deps.temporal, { organisationId, creditNoteId: note.id, invoiceId: note.invoiceId, amount: note.total, currency: note.currency });
      }
    },
  };
}
