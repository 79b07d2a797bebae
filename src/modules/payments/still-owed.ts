import type { Knex } from 'knex';
import { Decimal } from '../../domain/money';
import { amountDue } from '../invoices';
import { createPaymentRepository } from './payments.repository';

/**
 * What an invoice still owes: its amount due less the payments recorded against it in its currency (a bank
 * transfer of part of it, say). What a gateway may still charge, and the most a payment of it may be. Null
 * when the invoice has no total (a draft, a cancelled invoice).
 */
export async function stillOwed(db: Knex, invoice: Parameters<typeof amountDue>[0] & { organisation_id: string; id: string; currency: string }): Promise<string | null> {
  const due = amountDue(invoice);
  if (due === null) return null;
  return new Decimal(due).minus(await createPaymentRepository(db).paidTowards(invoice.organisation_id, invoice.id, invoice.currency)).toFixed();
}
