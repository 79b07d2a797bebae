import type { Knex } from 'knex';
import { calendarDay } from '../src/db/dates';
import { convert } from '../src/domain/fx';
import { Decimal, formatAmount, roundToMinor } from '../src/domain/money';
import { findEffectiveRate } from '../src/modules/fx-rates/fx-rates.repository';
import { contractTaxesOf } from '../src/modules/contracts/contract-plans.repository';
import { getOrganisationSettings } from '../src/modules/organisation-settings/settings.repository';
import { AppError } from '../src/domain/errors';

interface InvoiceForTotals {
  id: string;
  organisation_id: string;
  contract_id?: string | null;
  currency: string;
  date: Date | string;
}

export interface InvoiceTotals {
  subtotal: string;
  tax_total: string;
  total: string;
  base_currency: string;
  fx_rate: string;
  base_total: string;
  data: string;
}

/**
 * Fixed at raise: each item's amount (quantity × price rounded half-up to the currency's minor unit),
 * the subtotal, each contract tax over the items it applies to, the total, and the total in the
 * organisation's base currency at the rate effective on the invoice date.
 */
export async function computeInvoiceTotals(trx: Knex.Transaction, invoice: InvoiceForTotals): Promise<InvoiceTotals> {
  const items = await trx('invoice_items')
    .where({ invoice_id: invoice.id })
    .select<{ id: string; plan_item_id: string | null; quantity: string; price: string }[]>('id', 'plan_item_id', 'quantity', 'price');
  const amounts: Array<{ planItemId: string | null; amount: Decimal }> = [];
  for (const item of items) {
    const amount = roundToMinor(new Decimal(item.quantity).times(item.price), invoice.currency);
    amounts.push({ planItemId: item.plan_item_id, amount });
    await trx('invoice_items').where({ id: item.id }).update({ amount: amount.toFixed(), updated_at: trx.fn.now() });
  }
  const subtotal = amounts.reduce((sum, item) => sum.plus(item.amount), new Decimal(0));

  const taxes = (invoice.contract_id ? await contractTaxesOf(trx, invoice.organisation_id, invoice.contract_id) : []).map((tax) => {
    const applies = tax.appliesTo;
    const base = applies === 'all' ? subtotal : amounts.filter((item) => item.planItemId && applies.includes(item.planItemId)).reduce((sum, item) => sum.plus(item.amount), new Decimal(0));
    return { name: tax.name, rate: tax.rate, amount: roundToMinor(base.times(tax.rate).dividedBy(100), invoice.currency) };
  });
  const taxTotal = taxes.reduce((sum, tax) => sum.plus(tax.amount), new Decimal(0));
  const total = subtotal.plus(taxTotal);

  const date = calendarDay(invoice.date);
  const baseCurrency = (await getOrganisationSettings(trx, invoice.organisation_id)).base_currency;
  let rate = '1';
  if (baseCurrency !== invoice.currency) {
    const effective = await findEffectiveRate(trx, invoice.organisation_id, invoice.currency, baseCurrency, date);
    if (!effective) throw new AppError('conflict', `No ${invoice.currency}/${baseCurrency} FX rate effective on ${date}`);
    rate = effective.rate;
  }
  return {
    subtotal: formatAmount(subtotal, invoice.currency),
    tax_total: formatAmount(taxTotal, invoice.currency),
    total: formatAmount(total, invoice.currency),
    base_currency: baseCurrency,
    fx_rate: rate,
    base_total: formatAmount(convert(total, rate, baseCurrency), baseCurrency),
    data: JSON.stringify({ taxes: taxes.map((tax) => ({ name: tax.name, rate: tax.rate, amount: formatAmount(tax.amount, invoice.currency) })) }),
  };
}
