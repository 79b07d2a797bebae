import type { Knex } from 'knex';
import { createInvoiceRepository } from './invoices.repository';

export { loadInvoiceDocument } from './invoice-document';
export type { InvoiceSettlements, SettlementReader } from './invoice-document';
export { createInvoiceFileService } from './invoice-files.service';
export { createInvoiceItemService } from './invoice-items.service';
export { documentPdf, invoiceMailVariables, mailWithPdf, pdfAttachment } from './invoice-mail';
export { renderInvoicePdf } from './invoice-pdf';
export type { InvoiceDocument } from './invoice-pdf';
export { lifecycleSnapshot } from './invoice-snapshot';
export type { LifecycleSnapshot } from './invoice-snapshot';
export { invoiceOverflow, priceInvoice } from './invoice-pricing';
export type { PricedLine } from './invoice-pricing';
export { computeInvoiceTotals } from './invoice-totals';
export { AGEING_BUCKETS, amountDue, itemColumnProblem } from './invoices.repository';
export type { AgeingBucket, Invoice, InvoiceItemRow, InvoiceRow, InvoiceStatusChange, NewInvoice, NewInvoiceItem, TransitionRow } from './invoices.repository';
export { invoiceReferenceFields, invoiceSchema } from './invoices.schemas';
export { createInvoiceService } from './invoices.service';
export type { InvoiceService } from './invoices.service';

/** What other modules may do with these rows, inside the transaction (unit of work) they pass. */
export type InvoiceAccess = Pick<ReturnType<typeof createInvoiceRepository>, 'addCreditedDue' | 'ageing' | 'anyForContractPlan' | 'cancelledAmong' | 'countByStatus' | 'couponLinesAmong' | 'create' | 'createMany' | 'customersOf' | 'find' | 'findItem' | 'findMany' | 'findRow' | 'findTransition' | 'items' | 'itemsByIds' | 'lock' | 'markTransitionUndone' | 'progressiveAmong' | 'recordReminder' | 'recordTransition' | 'reminderDays' | 'setCreditedToBalance' | 'setCreditsApplied' | 'setStatus' | 'takeNextNumber' | 'transitions'>;
export const invoicesIn = (db: Knex): InvoiceAccess => createInvoiceRepository(db);
