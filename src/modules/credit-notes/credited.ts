import type { Knex } from 'knex';
import type { CreditedSoFar } from '../../domain/credit-notes';
import { roundToMinor, sumAmounts, toDecimal } from '../../domain/money';
import { createPlanChangeRepository } from '../contracts/plan-changes.repository';
import type { InvoiceRow } from '../invoices/invoices.repository';
import { createCreditNoteRepository } from './credit-notes.repository';

/**
 * What has been credited of the invoice so far: by its credit notes (not voided), and by plan changes whose
 * credit for its in-advance fees sits on a later invoice (their tax in the invoice's proportion), so that
 * no line is credited twice over. Read under the invoice's row lock.
 */
export async function creditedOf(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'contract_id' | 'currency' | 'subtotal' | 'total'>): Promise<CreditedSoFar> {
  const byNotes = await createCreditNoteRepository(trx).creditedSoFar(invoice.id);
  const byChanges = invoice.contract_id ? await createPlanChangeRepository(trx).creditsOnInvoice(invoice.contract_id, invoice.id) : new Map<string, string>();
  if (byChanges.size === 0) return byNotes;
  const net = sumAmounts([...byChanges.values()]);
  const subtotal = toDecimal(invoice.subtotal ?? '0');
  const gross = subtotal.isZero() ? net : roundToMinor(net.times(invoice.total ?? '0').dividedBy(subtotal), invoice.currency);
  const byItem = new Map(byNotes.byItem);
  for (const [itemId, amount] of byChanges) byItem.set(itemId, sumAmounts([byItem.get(itemId) ?? '0', amount]).toFixed());
  return { subtotal: net.plus(byNotes.subtotal).toFixed(), total: gross.plus(byNotes.total).toFixed(), byItem };
}
