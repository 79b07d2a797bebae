import { WorkflowNotFoundError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import type { Knex } from 'knex';
import type { WorkflowServiceDeps } from '../../temporal/client';
import { AppError, orNotFound } from '../../domain/errors';
import { ISO_DATE, isAhead } from '../../domain/iso-dates';
import { allowedActions, INVOICE_STATES, type InvoiceAction } from '../../domain/invoice-state';
import { type InvoiceLifecycleInput, type LifecycleView, cancelUpdate, lifecycleQuery, markPaidUpdate, raiseUpdate, sendUpdate, undoUpdate } from '../../../workflows/invoice-lifecycle.types';
import { invoiceWorkflowId, searchAttributes } from '../../../workflows/ids';
import { InvoiceNumberKey } from '../../../workflows/search-attributes';
import type { Page, PageQuery } from '../../http/paging';
import type { ContractPlanRef } from '../contracts';
import { customerToday } from '../customers';
import { organisationToday, zoneOf } from '../organisation-settings';
import { loadInvoiceDocument, type SettlementReader } from './invoice-document';
import { assertPlanItemsKnown } from './invoice-items.service';
import { assertInvoiceFits } from './invoice-pricing';
import { lifecycleSnapshot } from './invoice-snapshot';
import { documentPdf } from './invoice-mail';
import { createInvoiceRepository, type Invoice, type InvoiceFilter, type InvoiceRow, type NewInvoice } from './invoices.repository';

export type ContractPlanResolver = (db: Knex, organisationId: string, contractPlanId: string) => Promise<ContractPlanRef | undefined>;

/** `collectedAttemptId`: the gateway's payment attempt that paid (docs/payments.md); set by collection only. */
type TransitionArgs = { paidDate?: string; comments?: string; collectedAttemptId?: string };

/** Lifecycle changes go through the invoice's workflow; reads come from Postgres, already committed. */
export function createInvoiceService(deps: WorkflowServiceDeps, resolveContractPlan: ContractPlanResolver, settlements: SettlementReader) {
  const invoices = createInvoiceRepository(deps.db);
  const { workflows } = deps.temporal;

  /**
   * Postgres is the source of truth: a workflow started for an invoice that has a history (its first run
   * ended, or was terminated or reset) begins from the state and undo stack the database records.
   */
  async function carriedOf(row: InvoiceRow): Promise<InvoiceLifecycleInput['carried']> {
    const snapshot = await lifecycleSnapshot(deps.db, row);
    return snapshot.nextSeq === 1 ? undefined : snapshot;
  }

  function startOperation(row: InvoiceRow, carried?: InvoiceLifecycleInput['carried']) {
    return workflows.withStart('invoiceLifecycleWorkflow', {
      workflowId: invoiceWorkflowId(row.id),
      args: [{ invoiceId: row.id, organisationId: row.organisation_id, ...(carried ? { carried } : {}) }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      // A workflow started for a raised invoice (its first run ended, was terminated or reset) is found by its number too.
      typedSearchAttributes: [
        ...searchAttributes({ organisationId: row.organisation_id, customerId: row.customer_id, contractId: row.contract_id }).typedSearchAttributes,
        ...(row.number ? [{ key: InvoiceNumberKey, value: row.number }] : []),
      ],
    });
  }

  async function requireRow(organisationId: string, id: string): Promise<InvoiceRow> {
    return orNotFound(await invoices.findRow(organisationId, id), 'Invoice');
  }

  async function reread(organisationId: string, id: string): Promise<Invoice> {
    return (await invoices.find(organisationId, id))!;
  }

  /**
   * Update-with-start: the workflow is started if an earlier start was lost, so an invoice row is never
   * stranded without its lifecycle. The Update returns after its activities committed. `idempotencyKey`
   * (the request's) names the Update with its step: Temporal answers an Update id it has seen with that
   * Update's outcome, so a key used on the raise and then on the mark-paid would mark nothing paid.
   */
  async function update<Args extends unknown[]>(row: InvoiceRow, definition: UpdateDefinition<LifecycleView, Args>, args: Args, idempotencyKey?: string) {
    const startWorkflowOperation = startOperation(row, await carriedOf(row));
    const updateId = idempotencyKey === undefined ? undefined : `${definition.name}:${idempotencyKey}`;
    await deps.temporal.bounded(() => workflows.executeUpdateWithStart(definition, { args, updateId, startWorkflowOperation }), 'update');
  }

  /**
   * The day the money arrived has come: a date not after today in the customer's time zone (else the
   * organisation's), an instant not after now (a minute's leeway for clocks). A day ahead would stamp the
   * payment, the collections and the ledger with a day that has not happened.
   */
  async function assertPaidBy(row: InvoiceRow, paidDate: string): Promise<void> {
    if (ISO_DATE.test(paidDate)) {
      const today = row.customer_id ? await customerToday(deps.db, row.organisation_id, row.customer_id) : await organisationToday(deps.db, row.organisation_id);
      if (paidDate > today) throw AppError.validation(`must not be after today (${today} in the customer's time zone, else the organisation's): the day the money arrived`, 'body.paidDate');
    } else if (isAhead(paidDate)) {
      throw AppError.validation('must not be in the future: the instant the money arrived', 'body.paidDate');
    }
  }

  return {
    async get(organisationId: string, id: string): Promise<Invoice> {
      return orNotFound(await invoices.find(organisationId, id), 'Invoice');
    },

    /** `overdue` is judged on today in each invoice's customer's time zone, else the organisation's, whatever else the filter names. */
    async list(organisationId: string, filter: Omit<InvoiceFilter, 'overdue'> & { overdue?: boolean }, paging: PageQuery): Promise<Page<Invoice>> {
      const { overdue, ...rest } = filter;
      if (overdue === undefined) return invoices.list(organisationId, rest, paging);
      return invoices.list(organisationId, { ...rest, overdue: { is: overdue, zone: await zoneOf(deps.db, organisationId) } }, paging);
    },

    /** The invoice as a PDF, with the file name it is offered under. */
    async pdf(organisationId: string, id: string): Promise<{ filename: string; content: Buffer }> {
      const document = await loadInvoiceDocument(deps.db, organisationId, id, settlements);
      return documentPdf(document, id);
    },

    async create(organisationId: string, input: Omit<NewInvoice, 'organisationId' | 'customerId' | 'contractId' | 'currency'>): Promise<Invoice> {
      const plan = orNotFound(await resolveContractPlan(deps.db, organisationId, input.contractPlanId), 'Contract plan');
      await assertPlanItemsKnown(deps.db, organisationId, input.items);
      await assertInvoiceFits(deps.db, plan.contractId, plan.currency, input.items.map((item) => ({ quantity: item.quantity, price: item.price, plan_item_id: item.planItemId ?? null })), 'body.invoiceItems');
      const row = await invoices.create({ ...input, organisationId, ...plan });
      try {
        await deps.temporal.bounded(() => workflows.start('invoiceLifecycleWorkflow', startOperation(row).options));
      } catch (error) {
        // The draft is whole in Postgres; its first transition starts the workflow (update-with-start).
        if (!(error instanceof AppError && error.kind === 'unavailable')) throw error;
      }
      return reread(organisationId, row.id);
    },

    /** A draft's references; an invoice past draft answers 409. */
    async updateDraft(organisationId: string, id: string, changes: { customerReference?: string | null; purchaseOrderNumber?: string | null }): Promise<Invoice> {
      const row = await invoices.setDraftReferences(organisationId, id, { customer_reference: changes.customerReference, purchase_order_number: changes.purchaseOrderNumber });
      if (!row) {
        const found = await requireRow(organisationId, id);
        throw AppError.conflict(`the invoice is ${found.status}: its references change only while it is a draft`);
      }
      return reread(organisationId, id);
    },

    async transition(organisationId: string, id: string, action: InvoiceAction, args: TransitionArgs = {}, idempotencyKey?: string): Promise<Invoice> {
      const row = await requireRow(organisationId, id);
      switch (action) {
        case 'raise':
          await update(row, raiseUpdate, [], idempotencyKey);
          break;
        case 'send':
          await update(row, sendUpdate, [], idempotencyKey);
          break;
        case 'markPaid':
          if (!args.paidDate) throw AppError.validation('paidDate is required for paid', 'body.paidDate');
          await assertPaidBy(row, args.paidDate);
          await update(row, markPaidUpdate, [{ paidDate: args.paidDate, ...(args.collectedAttemptId ? { collectedAttemptId: args.collectedAttemptId } : {}) }], idempotencyKey);
          break;
        case 'cancel':
          await update(row, cancelUpdate, [{ comments: args.comments }], idempotencyKey);
          break;
        case 'undo':
          await update(row, undoUpdate, [], idempotencyKey);
          break;
      }
      return reread(organisationId, id);
    },

    /** PUT /invoices/{id}: asking for the state the invoice is already in changes nothing. */
    async setStatus(organisationId: string, id: string, status: 'paid' | 'cancelled', args: TransitionArgs): Promise<Invoice> {
      const row = await requireRow(organisationId, id);
      if (row.status === status) return reread(organisationId, id);
      return this.transition(organisationId, id, status === 'paid' ? 'markPaid' : 'cancel', args);
    },

    async lifecycle(organisationId: string, id: string): Promise<LifecycleView & { states: readonly string[] }> {
      const row = await requireRow(organisationId, id);
      try {
        const view = await deps.temporal.bounded(() => workflows.query(invoiceWorkflowId(id), lifecycleQuery));
        return { ...view, states: INVOICE_STATES };
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
        return { state: row.status, allowedActions: allowedActions(row.status, 0), transitions: 0, states: INVOICE_STATES };
      }
    },
  };
}

export type InvoiceService = ReturnType<typeof createInvoiceService>;
