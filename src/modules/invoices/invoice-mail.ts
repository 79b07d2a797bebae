import type { InvoiceDocument } from './invoice-pdf';

/**
 * The variables every invoice message is rendered with (the invoice and reminder templates, built-in or
 * the organisation's own); `docs/emails.md` lists them. Reminders add `daysOverdue`.
 */
export function invoiceMailVariables(document: InvoiceDocument, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    invoice: {
      number: document.number,
      status: document.status,
      date: document.date,
      dueDate: document.dueDate,
      periodFrom: document.fromDate ?? document.date,
      periodTo: document.toDate ?? document.date,
      currency: document.currency,
      subtotal: document.subtotal,
      total: document.total,
      // What is left to pay once the customer's credit and credit notes are counted, and whether that differs from the total.
      amountDue: document.settled?.amountDue ?? document.total,
      partlySettled: document.settled !== undefined,
      baseCurrency: document.baseCurrency,
      baseTotal: document.baseTotal,
    },
    seller: { name: document.seller?.name ?? 'us', taxId: document.seller?.taxId ?? null },
    customer: { name: document.customer?.name ?? null, taxId: document.customer?.taxId ?? null },
    ...extra,
  };
}
