import { DomainError } from './errors';
import { Decimal, formatAmount, toDecimal } from './money';

export type PricingModel = 'flat' | 'per_unit' | 'graduated' | 'volume' | 'package';
type Numeric = number | string;

export interface Tier {
  upTo: Numeric | null;
  unitPrice: Numeric;
  flatFee?: Numeric | null;
}

export interface PricedPlanItem {
  pricingModel: PricingModel;
  unitPrice?: Numeric | null;
  quantity?: Numeric | null;
  tiers?: Tier[] | null;
  packageSize?: Numeric | null;
}

export interface PriceLine {
  description: string;
  quantity: string;
  unitPrice: string;
  amount: string;
}

export interface Price {
  amount: string;
  lines: PriceLine[];
}

const invalid = (message: string) => new DomainError(message);

function nonNegative(value: Numeric | null | undefined, field: string): Decimal {
  if (value === undefined || value === null) throw invalid(`${field} is required`);
  const decimal = toDecimal(value);
  if (decimal.isNegative()) throw invalid(`${field} must not be negative`);
  return decimal;
}

interface ParsedTier {
  upTo: Decimal | null;
  unitPrice: Decimal;
  flatFee: Decimal;
}

function parseTiers(tiers: Tier[] | null | undefined): ParsedTier[] {
  if (!tiers || tiers.length === 0) throw invalid('tiers are required');
  const parsed = tiers.map((tier, i) => ({
    upTo: tier.upTo === null ? null : nonNegative(tier.upTo, `tiers[${i}].upTo`),
    unitPrice: nonNegative(tier.unitPrice, `tiers[${i}].unitPrice`),
    flatFee: tier.flatFee === undefined || tier.flatFee === null ? new Decimal(0) : nonNegative(tier.flatFee, `tiers[${i}].flatFee`),
  }));
  parsed.forEach((tier, i) => {
    const last = i === parsed.length - 1;
    if (last !== (tier.upTo === null)) throw invalid('only the last tier is unbounded (upTo null), and it must be');
    const previous = parsed[i - 1]?.upTo;
    if (previous && tier.upTo && !tier.upTo.gt(previous)) throw invalid('tiers must be sorted by upTo, ascending');
  });
  return parsed;
}

/** Throws a DomainError when the item cannot be priced. */
export function validatePlanItemPricing(item: PricedPlanItem): void {
  switch (item.pricingModel) {
    case 'flat':
    case 'per_unit':
      nonNegative(item.unitPrice, 'unitPrice');
      if (item.quantity !== undefined && item.quantity !== null) nonNegative(item.quantity, 'quantity');
      return;
    case 'graduated':
    case 'volume':
      parseTiers(item.tiers);
      return;
    case 'package': {
      nonNegative(item.unitPrice, 'unitPrice');
      const size = nonNegative(item.packageSize, 'packageSize');
      if (size.isZero()) throw invalid('packageSize must be greater than zero');
      return;
    }
    default:
      throw invalid(`unknown pricing model ${String((item as { pricingModel: unknown }).pricingModel)}`);
  }
}

const text = (value: Decimal) => value.toFixed();

/**
 * Prices one plan item for a quantity, in full precision; only the final amount is rounded to the
 * currency's minor unit. Lines explain how the amount came about (one per touched tier).
 */
export function priceItem(item: PricedPlanItem, quantity: Numeric, currency: string): Price {
  validatePlanItemPricing(item);
  // Usage can add up to less than nothing (events of negative value that outweigh the rest): a per-unit
  // price gives those units back (a credit); tiers and packages price nothing below zero, so such usage
  // rates as none.
  const given = toDecimal(quantity);
  const q = item.pricingModel === 'per_unit' ? given : Decimal.max(given, 0);
  const lines: Array<{ description: string; quantity: Decimal; unitPrice: Decimal; amount: Decimal }> = [];
  switch (item.pricingModel) {
    case 'flat': {
      // A fixed charge: the item's own quantity (default 1), whatever the usage.
      const units = item.quantity === undefined || item.quantity === null ? new Decimal(1) : toDecimal(item.quantity);
      const price = toDecimal(item.unitPrice!);
      lines.push({ description: 'flat fee', quantity: units, unitPrice: price, amount: units.times(price) });
      break;
    }
    case 'per_unit': {
      const price = toDecimal(item.unitPrice!);
      lines.push({ description: 'per unit', quantity: q, unitPrice: price, amount: q.times(price) });
      break;
    }
    case 'graduated': {
      let lower = new Decimal(0);
      for (const [i, tier] of parseTiers(item.tiers).entries()) {
        if (q.lte(lower)) break;
        const upper = tier.upTo === null ? q : Decimal.min(q, tier.upTo);
        const units = upper.minus(lower);
        lines.push({ description: `tier ${i + 1}`, quantity: units, unitPrice: tier.unitPrice, amount: units.times(tier.unitPrice) });
        if (tier.flatFee.gt(0)) lines.push({ description: `tier ${i + 1} flat fee`, quantity: new Decimal(1), unitPrice: tier.flatFee, amount: tier.flatFee });
        if (tier.upTo === null) break;
        lower = tier.upTo;
      }
      break;
    }
    case 'volume': {
      const tiers = parseTiers(item.tiers);
      const index = tiers.findIndex((tier) => tier.upTo === null || q.lte(tier.upTo));
      const tier = tiers[index]!;
      lines.push({ description: `tier ${index + 1}`, quantity: q, unitPrice: tier.unitPrice, amount: q.times(tier.unitPrice) });
      if (tier.flatFee.gt(0)) lines.push({ description: `tier ${index + 1} flat fee`, quantity: new Decimal(1), unitPrice: tier.flatFee, amount: tier.flatFee });
      break;
    }
    case 'package': {
      const packages = q.dividedBy(toDecimal(item.packageSize!)).ceil();
      const price = toDecimal(item.unitPrice!);
      lines.push({ description: 'packages', quantity: packages, unitPrice: price, amount: packages.times(price) });
      break;
    }
  }
  const amount = lines.reduce((sum, line) => sum.plus(line.amount), new Decimal(0));
  return {
    amount: formatAmount(amount, currency),
    lines: lines.map((line) => ({ description: line.description, quantity: text(line.quantity), unitPrice: text(line.unitPrice), amount: text(line.amount) })),
  };
}
