import type { Knex } from 'knex';
import { calendarDay } from '../../db/dates';
import { AppError } from '../../domain/errors';
import { convert } from '../../domain/fx';
import { allocate, Decimal, formatAmount, INVOICE_AMOUNT_LIMIT, roundToMinor, sumAmounts, toDecimal } from '../../domain/money';
import { contractTaxesOfMany, taxesInForce, type ContractTax } from '../contracts';
import { findEffectiveRate } from '../fx-rates';
import { getOrganisationSettings } from '../organisation-settings';

/** What an invoice's money is computed from: its lines (as stored) and its contract's taxes. */
export interface PricedLine {
  quantity: string;
  price: string;
  plan_item_id: string | null;
  /** The line's first day: it is taxed by the versions of the contract's taxes in force then. */
  from_date?: Date | string | null;
  to_date?: Date | string | null;
  /** A coupon's discount line: it comes off the lines of its plan item within its days. */
  coupon_id?: string | null;
}

export interface PricedInvoice {
  /** Each line's amount, in the lines' order: quantity × price rounded half-up to the currency's minor unit. */
  amounts: Decimal[];
  subtotal: Decimal;
  /** Each version of a contract tax over the lines it applies to (`lines`: their indexes), on `base` (their amounts, less coupon shares). */
  taxes: Array<ContractTax & { amount: Decimal; base: Decimal; lines: number[] }>;
  taxTotal: Decimal;
  total: Decimal;
}

/**
 * The one computation of an invoice's money from its lines: what raising an invoice fixes, and what a
 * draft shows until then. Each line is taxed by the version of each of the contract's tax lines in force on
 * its first day (a line without days: on the invoice's `date`), among those that apply to its plan item;
 * each version so used is a tax line of the invoice, rounded once over its lines. Days already charged
 * keep their versions (a tax changes only from a day not charged yet), so a correction of them on a later
 * invoice is taxed as they were. A coupon's discount line comes off the lines it discounted: where those
 * were taxed by different versions (a run that catches up months across a change of rate, or late usage of
 * a month discounted with the next), it is shared over them in proportion to their amounts, and each share
 * lowers the base of its lines' versions. The versions in force on the invoice's date are tax lines even
 * over no line.
 */
export function priceInvoice(lines: readonly PricedLine[], taxes: readonly ContractTax[], currency: string, date: string | null = null): PricedInvoice {
  const amounts = lines.map((line) => roundToMinor(new Decimal(line.quantity).times(line.price), currency));
  const subtotal = sumAmounts(amounts);
  const dayOf = (value: Date | string | null | undefined) => (value ? calendarDay(value) : null);
  const versionsOf = (planItemId: string | null, day: string | null) =>
    taxesInForce(taxes, day).filter((tax) => tax.appliesTo === 'all' || (planItemId !== null && tax.appliesTo.includes(planItemId)));
  const linesOf = new Map<ContractTax, number[]>(taxesInForce(taxes, date).map((tax) => [tax, []]));
  const bases = new Map<ContractTax, Decimal>();
  const tax = (index: number, versions: readonly ContractTax[], amount: Decimal) => {
    for (const version of versions) {
      const taxed = linesOf.get(version) ?? [];
      if (!taxed.includes(index)) taxed.push(index);
      linesOf.set(version, taxed);
      bases.set(version, (bases.get(version) ?? new Decimal(0)).plus(amount));
    }
  };
  lines.forEach((line, index) => {
    const parts = line.coupon_id ? discountParts(line) : undefined;
    if (!parts) return tax(index, versionsOf(line.plan_item_id, dayOf(line.from_date) ?? date), amounts[index]!);
    const shares = allocate(amounts[index]!.negated(), parts.map((part) => part.weight), currency);
    parts.forEach((part, i) => tax(index, part.versions, shares[i]!.negated()));
  });
  const taxed = taxes
    .filter((version) => linesOf.has(version))
    .map((version) => {
      const base = bases.get(version) ?? new Decimal(0);
      return { ...version, lines: linesOf.get(version)!, base, amount: roundToMinor(base.times(version.rate).dividedBy(100), currency) };
    });
  const taxTotal = sumAmounts(taxed.map((version) => version.amount));
  return { amounts, subtotal, taxes: taxed, taxTotal, total: subtotal.plus(taxTotal) };

  /**
   * A discount line's lines (its plan item's, within its days) grouped by the versions that taxed them,
   * each with what they add up to; undefined when they add up to nothing or less (or there are none), and
   * the line is taxed as any other. Groups that add up to nothing are left out.
   */
  function discountParts(discount: PricedLine): Array<{ versions: ContractTax[]; weight: Decimal }> | undefined {
    const from = dayOf(discount.from_date);
    const to = dayOf(discount.to_date);
    if (from === null || to === null) return undefined;
    const groups = new Map<string, { versions: ContractTax[]; weight: Decimal }>();
    lines.forEach((line, index) => {
      const first = dayOf(line.from_date);
      const last = dayOf(line.to_date);
      if (line.coupon_id || line.plan_item_id !== discount.plan_item_id || first === null || last === null || first < from || last > to) return;
      const versions = versionsOf(line.plan_item_id, first);
      const key = versions.map((version) => taxes.indexOf(version)).join(' ');
      const group = groups.get(key) ?? { versions, weight: new Decimal(0) };
      group.weight = group.weight.plus(amounts[index]!);
      groups.set(key, group);
    });
    const parts = [...groups.values()].filter((group) => !group.weight.isZero());
    const whole = parts.reduce((sum, group) => sum.plus(group.weight), new Decimal(0));
    return parts.length > 0 && whole.greaterThan(0) ? parts : undefined;
  }
}

/** The first of the priced line amounts past what an invoice line holds, in words; null when they all fit. */
export function lineOverflow(amounts: readonly Decimal[], currency: string): string | null {
  const line = amounts.findIndex((amount) => amount.abs().gte(INVOICE_AMOUNT_LIMIT));
  return line < 0 ? null : `line ${line + 1} would be ${formatAmount(amounts[line]!, currency)}, more than an invoice line can hold (at most 20 digits before the point)`;
}

/**
 * What would keep an invoice of these lines from being raised: a line's amount, the subtotal or the total
 * with the contract's taxes past its column (NUMERIC(24,4): at most 20 digits before the point); null
 * when they all fit.
 */
export function invoiceOverflow(lines: readonly PricedLine[], taxes: readonly ContractTax[], currency: string): string | null {
  const priced = priceInvoice(lines, taxes, currency);
  const line = lineOverflow(priced.amounts, currency);
  if (line) return line;
  for (const [name, value] of [['subtotal', priced.subtotal], ['total', priced.total]] as const) {
    if (value.abs().gte(INVOICE_AMOUNT_LIMIT)) return `the invoice's ${name} would be ${formatAmount(value, currency)}, more than an invoice can hold (at most 20 digits before the point)`;
  }
  return null;
}

/**
 * Refuses lines whose invoice could never be raised: each line fits its column, but their sum, or the sum
 * with the contract's taxes, may not fit the invoice's. Checked when a draft is made or its lines change,
 * by the path of the lines, so that no draft is left that its raise would refuse.
 */
export async function assertInvoiceFits(db: Knex, contractId: string | null, currency: string, lines: readonly PricedLine[], path: string): Promise<void> {
  const taxes = contractId ? ((await contractTaxesOfMany(db, [contractId])).get(contractId) ?? []) : [];
  const problem = invoiceOverflow(lines, taxes, currency);
  if (problem) throw AppError.validation(problem, path);
}

/** The decimals of an invoice's `fx_rate` column. */
const INVOICE_FX_RATE_DECIMALS = 12;

/** Units of the base currency for one unit of `currency` on `date`; undefined when no rate is effective. */
export async function baseRateOf(db: Knex, organisationId: string, currency: string, baseCurrency: string, date: string): Promise<string | undefined> {
  if (baseCurrency === currency) return '1';
  const rate = (await findEffectiveRate(db, organisationId, currency, baseCurrency, date))?.rate;
  // As the invoice keeps it (its column has 12 decimals), so that its base total is its total times the rate
  // it shows: an inverse rate (1 / 17,500 IDR) has more decimals than that, which Postgres would round away.
  return rate === undefined ? undefined : toDecimal(rate).toDecimalPlaces(INVOICE_FX_RATE_DECIMALS, Decimal.ROUND_HALF_UP).toFixed();
}

/** A draft's figures as its raise would fix them now; `fxRate` and `baseTotal` null while no rate is effective. */
export interface DraftFigures {
  subtotal: string;
  taxTotal: string;
  total: string;
  baseCurrency: string;
  fxRate: string | null;
  baseTotal: string | null;
  /** Each line's amount, by item id. */
  amounts: Map<string, string>;
  /** Its tax lines, as the raise records them in the invoice's `data.taxes`. */
  taxes: RecordedTaxLine[];
}

/** A tax line of an invoice, as its raise records it in `data.taxes` and its document prints it. */
export interface RecordedTaxLine {
  name: string;
  rate: string;
  amount: string;
  appliesTo: 'all' | string[];
  /** The invoice items it taxes: credit notes tax what they credit of each item by the lines that taxed it. */
  items: string[];
}

/** The tax lines of a priced invoice as they are recorded; `itemIds` are its items' ids, in the order priced. */
export const recordedTaxes = (priced: PricedInvoice, currency: string, itemIds: readonly string[]): RecordedTaxLine[] =>
  priced.taxes.map((tax) => ({ name: tax.name, rate: tax.rate, amount: formatAmount(tax.amount, currency), appliesTo: tax.appliesTo, items: tax.lines.map((index) => itemIds[index]!) }));

export interface Draft {
  id: string;
  organisation_id: string;
  contract_id: string | null;
  currency: string;
  date: Date;
  items: ReadonlyArray<PricedLine & { id: string }>;
}

/**
 * Drafts priced by `priceInvoice`, with their contracts' taxes and the organisation's base currency as they
 * stand: one read of the taxes for all the drafts, one of the settings per organisation, one per rate.
 */
export async function draftFigures(db: Knex, drafts: readonly Draft[]): Promise<Map<string, DraftFigures>> {
  const figures = new Map<string, DraftFigures>();
  if (drafts.length === 0) return figures;
  const baseCurrencies = new Map<string, string>();
  const rates = new Map<string, string | undefined>();
  for (const organisationId of new Set(drafts.map((draft) => draft.organisation_id))) {
    baseCurrencies.set(organisationId, (await getOrganisationSettings(db, organisationId)).base_currency);
  }
  const taxes = await contractTaxesOfMany(db, [...new Set(drafts.flatMap((draft) => (draft.contract_id ? [draft.contract_id] : [])))]);
  for (const draft of drafts) {
    const priced = priceInvoice(draft.items, draft.contract_id ? (taxes.get(draft.contract_id) ?? []) : [], draft.currency, calendarDay(draft.date));
    const baseCurrency = baseCurrencies.get(draft.organisation_id)!;
    const date = calendarDay(draft.date);
    const key = `${draft.organisation_id}|${draft.currency}|${date}`;
    if (!rates.has(key)) rates.set(key, await baseRateOf(db, draft.organisation_id, draft.currency, baseCurrency, date));
    const rate = rates.get(key);
    figures.set(draft.id, {
      subtotal: formatAmount(priced.subtotal, draft.currency),
      taxTotal: formatAmount(priced.taxTotal, draft.currency),
      total: formatAmount(priced.total, draft.currency),
      baseCurrency,
      fxRate: rate ?? null,
      baseTotal: rate === undefined ? null : formatAmount(convert(priced.total, rate, baseCurrency), baseCurrency),
      amounts: new Map(draft.items.map((item, index) => [item.id, formatAmount(priced.amounts[index]!, draft.currency)])),
      taxes: recordedTaxes(priced, draft.currency, draft.items.map((item) => item.id)),
    });
  }
  return figures;
}
