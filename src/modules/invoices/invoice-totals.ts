import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { AppError } from '../../domain/errors';
import { convert } from '../../domain/fx';
import { Decimal, formatAmount, INVOICE_AMOUNT_LIMIT } from '../../domain/money';
import { chargeTax } from '../../domain/rating';
import { chargesIn } from '../charges';
import { contractTaxesOf, taxesInForce } from '../contracts';
import { getOrganisationSettings } from '../organisation-settings';
import { invoicePartiesOf } from './invoice-document';
import { baseRateOf, lineOverflow, priceInvoice, recordedTaxes } from './invoice-pricing';
import { createInvoiceRepository, type InvoiceRow, type InvoiceTotals } from './invoices.repository';

/**
 * Fixed at raise, inside the raise's transaction, by `priceInvoice`: each item's amount (written back to
 * the item), the subtotal, each contract tax over the items it applies to (recorded with the tax line),
 * the total, and the total in the organisation's base currency at the rate effective on the invoice date,
 * and the parties the invoice is printed with for good. A missing rate blocks the raise.
 */
export async function computeInvoiceTotals(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'organisation_id' | 'contract_id' | 'customer_id' | 'currency' | 'date'>): Promise<InvoiceTotals> {
  const invoices = createInvoiceRepository(trx);
  const items = await invoices.items(invoice.id);
  const contractTaxes = invoice.contract_id ? await contractTaxesOf(trx, invoice.organisation_id, invoice.contract_id) : [];
  const priced = priceInvoice(items, contractTaxes, invoice.currency, calendarDay(invoice.date));
  // Runs and line edits refuse lines past their column; a line from before those checks is refused here.
  const line = lineOverflow(priced.amounts, invoice.currency);
  if (line) throw AppError.conflict(`its ${line}`);
  for (const [index, item] of items.entries()) await invoices.setItemAmount(item.id, priced.amounts[index]!.toFixed());
  const { taxTotal, total } = priced;
  // The ledger's charges of the invoice carry their taxes too: at what net, and what tax, each day was
  // charged (by the versions in force on its first day, as its line).
  const charges = chargesIn(trx);
  await charges.setTaxes(new Map((await charges.ofInvoice(invoice.id)).map((charge) => [charge.id, chargeTax(charge, taxesInForce(contractTaxes, charge.from), invoice.currency)])));

  const baseCurrency = (await getOrganisationSettings(trx, invoice.organisation_id)).base_currency;
  const date = calendarDay(invoice.date);
  const rate = await baseRateOf(trx, invoice.organisation_id, invoice.currency, baseCurrency, date);
  if (rate === undefined) throw AppError.missingFxRate(invoice.currency, baseCurrency, date);
  // Lines are checked as they are added; taxes or a rate set since may still take a total past its column.
  for (const [name, value, currency] of [['total', total, invoice.currency], [`total in ${baseCurrency}`, convert(total, rate, baseCurrency), baseCurrency]] as const) {
    if (new Decimal(value).abs().gte(INVOICE_AMOUNT_LIMIT)) throw AppError.conflict(`its ${name} would be ${formatAmount(value, currency)}, more than an invoice can hold (at most 20 digits before the point)`);
  }
  return {
    subtotal: formatAmount(priced.subtotal, invoice.currency),
    tax_total: formatAmount(taxTotal, invoice.currency),
    total: formatAmount(total, invoice.currency),
    base_currency: baseCurrency,
    fx_rate: rate,
    base_total: formatAmount(convert(total, rate, baseCurrency), baseCurrency),
    data: JSON.stringify({
      // Each tax line keeps the plan items it applies to: credit notes tax each line they credit by them.
      taxes: recordedTaxes(priced, invoice.currency, items.map((item) => item.id)),
      // Who issued and who received it, as printed from now on: an issued document is never edited.
      parties: await invoicePartiesOf(trx, invoice.organisation_id, invoice.customer_id),
    }),
  };
}
