import type { Knex } from 'knex';
import type { InvoiceState } from '../src/domain/invoice-state';
import { AppError } from '../src/domain/errors';
import { syncInvoiceRevenue } from './revenue-sync';

export function createRevenueActivities(deps: { db: Knex }) {
  const { db } = deps;
  return {
    /** Recomputes one item's revenue records from its invoice's current state, under the invoice's row lock. */
    async syncItemRevenue(input: { organisationId: string; invoiceItemId: string }): Promise<{ records: number }> {
      return db.transaction(async (trx) => {
        const item = await trx('invoice_items').where({ organisation_id: input.organisationId, id: input.invoiceItemId }).first<{ invoice_id: string } | undefined>('invoice_id');
        if (!item) throw new AppError('not_found', 'Invoice item not found');
        const invoice = await trx('invoices').where({ id: item.invoice_id }).forUpdate().first();
        return { records: await syncInvoiceRevenue(trx, invoice, invoice.status as InvoiceState, input.invoiceItemId) };
      });
    },
  };
}

export type RevenueActivities = ReturnType<typeof createRevenueActivities>;
