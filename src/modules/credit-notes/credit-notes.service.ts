import type { UpdateDefinition } from '@temporalio/common';
import { assertCreditable, planCreditNote } from '../../domain/credit-notes';
import { AppError, orNotFound } from '../../domain/errors';
import { formatAmount, toDecimal } from '../../domain/money';
import type { Page, PageQuery } from '../../http/paging';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { issueCreditNoteUpdate, undoCreditNoteUpdate, voidCreditNoteUpdate } from '../../../workflows/credit-note.types';
import { creditNoteWorkflowId, searchAttributes } from '../../../workflows/ids';
import { contractsIn } from '../contracts';
import { customerToday } from '../customers';
import { documentPdf, invoicesIn } from '../invoices';
import { loadCreditNoteDocument } from './credit-note-document';
import { creditableOf, creditedOf, usageWindowLimitsOf } from './credited';
import { createCreditNoteRepository, type CreditNoteFilter, type CreditNoteRow } from './credit-notes.repository';
import type { CreateCreditNoteBody, CreditNote } from './credit-notes.schemas';
import { toCreditNote } from './credit-note-view';

/**
 * Credit notes: written as drafts in Postgres under the invoice's lock (so that what they credit never
 * exceeds the invoice), then issued, voided or undone through their workflow, one step at a time.
 */
export function createCreditNoteService(deps: WorkflowServiceDeps) {
  const { db, temporal } = deps;
  const notes = createCreditNoteRepository(db);

  async function view(organisationId: string, id: string): Promise<CreditNote> {
    return toCreditNote(orNotFound(await notes.find(organisationId, id), 'Credit note'));
  }

  /** Update-with-start: the note's workflow is started when it has none running (the first step, or a quiet one completed). */
  async function step(row: CreditNoteRow, definition: UpdateDefinition<void, []>): Promise<void> {
    const startWorkflowOperation = temporal.workflows.withStart('creditNoteWorkflow', {
      workflowId: creditNoteWorkflowId(row.id),
      args: [{ organisationId: row.organisation_id, creditNoteId: row.id }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      ...searchAttributes({ organisationId: row.organisation_id, customerId: row.customer_id }),
    });
    await temporal.bounded(() => temporal.workflows.executeUpdateWithStart(definition, { args: [], startWorkflowOperation }), 'update');
  }

  async function stepOn(organisationId: string, id: string, definition: UpdateDefinition<void, []>): Promise<CreditNote> {
    await step(orNotFound(await notes.find(organisationId, id), 'Credit note'), definition);
    return view(organisationId, id);
  }

  return {
    get: view,

    async list(organisationId: string, filter: CreditNoteFilter, paging: PageQuery): Promise<Page<CreditNote>> {
      const page = await notes.list(organisationId, filter, paging);
      return { ...page, items: page.items.map(toCreditNote) };
    },

    /**
     * Plans the note against the invoice and what its other notes credit, stores it as a draft, then issues
     * it. A draft whose issue failed is removed, so the request leaves nothing behind; one that was issued
     * meanwhile (the answer was lost, the step was not) is answered as issued. With an Idempotency-Key, a
     * retry of a request whose note exists (its answer was a 5xx, which is never final) carries that note
     * on, issuing it if it is still a draft, and never creates a second one.
     */
    async create(organisationId: string, invoiceId: string, body: CreateCreditNoteBody, requestKey?: string): Promise<CreditNote> {
      const earlier = requestKey === undefined ? undefined : await notes.findByRequestKey(organisationId, requestKey);
      if (earlier && earlier.invoice_id !== invoiceId) throw AppError.conflict('This Idempotency-Key already created a credit note of another invoice; use a new key for a new request', 'headers.idempotency-key');
      const draft = earlier ?? (await db.transaction(async (trx) => {
        const invoices = invoicesIn(trx);
        // The contract's row lock first, as runs take it (then the invoice's): what a usage window still
        // holds cannot change under the note.
        const contractId = (await invoices.findRow(organisationId, invoiceId))?.contract_id;
        if (contractId) await contractsIn(trx).lockMany(organisationId, [contractId]);
        const invoice = orNotFound(await invoices.lock(organisationId, invoiceId), 'Invoice');
        assertCreditable(invoice.status, body.refund ?? false);
        if (!invoice.customer_id) throw AppError.conflict('the invoice has no customer to credit');
        const credited = await creditedOf(trx, invoice);
        const plan = planCreditNote(await creditableOf(trx, invoice), credited, 'amount' in body ? { amount: body.amount } : { lines: body.items }, await usageWindowLimitsOf(trx, invoice));
        // On an unpaid invoice a credit note lowers what is owed: what the customer's credit paid is not owed.
        const room = toDecimal(invoice.total ?? '0').minus(invoice.credits_applied).minus(credited.total);
        if (invoice.status !== 'paid' && toDecimal(plan.total).greaterThan(room)) {
          throw AppError.conflict(`the invoice owes ${formatAmount(room.isNegative() ? 0 : room, invoice.currency)} ${invoice.currency} beyond its other credit notes, less than ${plan.total}: the rest was paid with the customer's credit; mark the invoice paid, then credit it`);
        }
        return createCreditNoteRepository(trx).insertDraft(
          { organisationId, invoiceId, customerId: invoice.customer_id, date: await customerToday(trx, organisationId, invoice.customer_id), currency: invoice.currency, reason: body.reason, refund: body.refund ?? false, ...(requestKey === undefined ? {} : { requestKey }) },
          plan,
        );
      }));
      if (draft.status !== 'draft') return view(organisationId, draft.id);
      try {
        await step(draft, issueCreditNoteUpdate);
      } catch (error) {
        if (await notes.deleteDraft(organisationId, draft.id)) throw error;
      }
      return view(organisationId, draft.id);
    },

    /** The credit note as a PDF, with the file name it is offered under. */
    async pdf(organisationId: string, id: string): Promise<{ filename: string; content: Buffer }> {
      const document = await loadCreditNoteDocument(db, organisationId, id);
      return documentPdf(document, id);
    },

    issue: (organisationId: string, id: string) => stepOn(organisationId, id, issueCreditNoteUpdate),
    void: (organisationId: string, id: string) => stepOn(organisationId, id, voidCreditNoteUpdate),
    undo: (organisationId: string, id: string) => stepOn(organisationId, id, undoCreditNoteUpdate),
  };
}

export type CreditNoteService = ReturnType<typeof createCreditNoteService>;
