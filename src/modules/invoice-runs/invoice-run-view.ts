import { calendarDay } from '../../db/dates';
import { formatAmount, formatExact } from '../../domain/money';
import type { InvoiceRunRepository, InvoiceRunRow, RunInvoice } from './invoice-runs.repository';
import type { InvoiceRun } from './invoice-runs.schemas';

/**
 * A run as its `invoice_run.completed` and `.failed` events carry it: as the API shows it (progress,
 * totals and failures counted in Postgres from its contracts' outcomes), without its invoice list.
 */
export async function finishedRun(runs: InvoiceRunRepository, row: InvoiceRunRow): Promise<Omit<InvoiceRun, 'invoices'>> {
  const summary = await runs.summary(row.id);
  const failures = summary.failed > 0 ? await runs.failures(row.id) : [];
  return {
    id: row.id,
    status: row.status,
    billingDate: calendarDay(row.billing_date),
    dryRun: row.dry_run,
    scheduleId: row.schedule_id,
    customerReference: row.customer_reference,
    purchaseOrderNumber: row.purchase_order_number,
    progress: { contracts: row.contracts_total, done: summary.done, failed: summary.failed },
    invoicesCreated: summary.totals.reduce((sum, total) => sum + total.created, 0),
    totals: summary.totals.map(({ currency, amount }) => ({ currency, amount: formatAmount(amount, currency) })),
    failures: failures.map((failure) => ({ contractId: failure.contract_id, code: failure.error_code ?? '', message: failure.error ?? '' })),
    startedAt: row.started_at.toISOString(),
    completedAt: row.completed_at?.toISOString() ?? null,
  };
}

/** A run as the API shows it: what its events carry, and a dry run's invoices. */
export async function toRun(runs: InvoiceRunRepository, row: InvoiceRunRow): Promise<InvoiceRun> {
  // A run's own invoices are paged at GET /invoices?invoiceRunId=; only a dry run's exist nowhere else.
  // Its lines as the upcoming invoice shows them: quantities and prices exact, without trailing zeros.
  const lines = (items: RunInvoice['items']) => items?.map((item) => ({ ...item, quantity: formatExact(item.quantity), price: formatExact(item.price) }));
  const invoices = row.dry_run
    ? (await runs.contractOutcomes(row.id)).flatMap((outcome) => outcome.invoices.map(({ items, ...invoice }) => ({ contractId: outcome.contract_id, ...invoice, ...(items ? { items: lines(items) } : {}) })))
    : [];
  return { ...(await finishedRun(runs, row)), invoices };
}
