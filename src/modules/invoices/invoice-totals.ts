import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { AppError } from '../../domain/errors';
import { convert } from '../../domain/fx';
import { Decimal, formatAmount, roundToMinor, sumAmounts } from '../../domain/money';
import { chargeTax } from '../../domain/rating';
import { chargesIn } from '../charges';
import { contractTaxesOf } from '../contracts';
import { findEffectiveRate } from '../fx-rates';
import { getOrganisationSettings } from '../organisation-settings';
import { createInvoiceRepository, type InvoiceRow, type InvoiceTotals } from './invoices.repository';

/** Units of the base currency for one unit of the invoice's, on the invoice date; a missing rate blocks the raise. */
async function baseRate(trx: Knex, invoice: Pick<InvoiceRow, 'organisation_id' | 'currency'>, baseCurrency: string, date: string): Promise<string> {
  if (baseCurrency === invoice.currency) return '1';
  const effective = await findEffectiveRate(trx, invoice.organisation_id, invoice.currency, baseCurrency, date);
  if (!effective) throw AppError.missingFxRate(invoice.currency, baseCurrency, date);
  return effective.rate;
}

/**
 * Fixed at raise, inside the raise's transaction: each item's amount (quantity × price rounded half-up to
 * the currency's minor unit, written back to the item), the subtotal, each contract tax over the items it
 * applies to (recorded with the tax line), the total, and the total in the organisation's base currency at
 * the rate effective on the invoice date.
 */
export async function computeInvoiceTotals(trx: Knex, invoice: Pick<InvoiceRow, 'id' | 'organisation_id' | 'contract_id' | 'currency' | 'date'>): Promise<InvoiceTotals> {
  const invoices = createInvoiceRepository(trx);
  const amounts: Array<{ planItemId: string | null; amount: Decimal }> = [];
  for (const item of await invoices.items(invoice.id)) {
    const amount = roundToMinor(new Decimal(item.quantity).times(item.price), invoice.currency);
    amounts.push({ planItemId: item.plan_item_id, amount });
    await invoices.setItemAmount(item.id, amount.toFixed());
  }
  const subtotal = sumAmounts(amounts.map((item) => item.amount));

  const taxes = (invoice.contract_id ? await contractTaxesOf(trx, invoice.organisation_id, invoice.contract_id) : []).map((tax) => {
    const applies = tax.appliesTo;
    const base = applies === 'all' ? subtotal : sumAmounts(amounts.filter((item) => item.planItemId && applies.includes(item.planItemId)).map((item) => item.amount));
    return { name: tax.name, rate: tax.rate, appliesTo: applies, amount: roundToMinor(base.times(tax.rate).dividedBy(100), invoice.currency) };
  });
  const taxTotal = sumAmounts(taxes.map((tax) => tax.amount));
  const total = subtotal.plus(taxTotal);
  // The ledger's charges of the invoice carry their taxes too: at what net, and what tax, each day was charged.
  const charges = chargesIn(trx);
  await charges.setTaxes(new Map((await charges.ofInvoice(invoice.id)).map((charge) => [charge.id, chargeTax(charge, taxes, invoice.currency)])));

  const baseCurrency = (await getOrganisationSettings(trx, invoice.organisation_id)).base_currency;
  const rate = await baseRate(trx, invoice, baseCurrency, calendarDay(invoice.date));
  return {
    subtotal: formatAmount(subtotal, invoice.currency),
    tax_total: formatAmount(taxTotal, invoice.currency),
    total: formatAmount(total, invoice.currency),
    base_currency: baseCurrency,
    fx_rate: rate,
    base_total: formatAmount(convert(total, rate, baseCurrency), baseCurrency),
    // Each tax line keeps the plan items it applies to: credit notes tax each line they credit by them.
    data: JSON.stringify({ taxes: taxes.map((tax) => ({ name: tax.name, rate: tax.rate, amount: formatAmount(tax.amount, invoice.currency), appliesTo: tax.appliesTo })) }),
  };
}
