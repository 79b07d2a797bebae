import DecimalBase from 'decimal.js';
import { currencyMinorUnits } from './currencies';
import { DomainError } from './errors';

/** Our own Decimal: 40 significant digits, and nobody else's global configuration. */
export const Decimal = DecimalBase.clone({ precision: 40, rounding: DecimalBase.ROUND_HALF_UP });
export type Decimal = InstanceType<typeof Decimal>;

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Invoice amounts (a line's, the subtotal, the total) are NUMERIC(24,4): at most 20 digits before the point. */
export const INVOICE_AMOUNT_LIMIT = new Decimal(10).pow(20);

/** Numbers or numeric strings in; never NaN, Infinity or free text. */
export function toDecimal(input: number | string | Decimal | DecimalBase): Decimal {
  if (input instanceof DecimalBase) {
    if (!input.isFinite()) throw new DomainError('amount must be finite');
    return new Decimal(input);
  }
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new DomainError('amount must be finite');
    return new Decimal(input);
  }
  if (typeof input === 'string' && NUMERIC.test(input.trim())) return new Decimal(input.trim());
  throw new DomainError(`${String(input)} is not a number`);
}

/** Half-up (away from zero) to the currency's minor unit. */
export function roundToMinor(amount: number | string | Decimal, currency: string): Decimal {
  return toDecimal(amount).toDecimalPlaces(currencyMinorUnits(currency), Decimal.ROUND_HALF_UP);
}

/** The output form of money: a string with exactly the currency's decimals ("10.50", JPY "1050"). */
export function formatAmount(amount: number | string | Decimal, currency: string): string {
  return roundToMinor(amount, currency).toFixed(currencyMinorUnits(currency));
}

/**
 * The output form of an exact decimal (unit prices, quantities, usage values, rates): every digit it has,
 * none added and none lost, no exponent and no trailing zero ("105079", "1.5", "0.000001").
 */
export function formatExact(value: number | string | Decimal): string {
  return toDecimal(value).toFixed();
}

/** `formatExact`, with null kept for a value that is not there. */
export const formatExactOrNull = (value: number | string | Decimal | null): string | null => (value === null ? null : formatExact(value));

export function sumAmounts(amounts: ReadonlyArray<number | string | Decimal>): Decimal {
  return amounts.reduce<Decimal>((sum, amount) => sum.plus(toDecimal(amount)), new Decimal(0));
}

/** More decimals than the currency has is an input error, not something to round silently. */
export function hasAtMostMinorUnits(amount: number | string | Decimal, currency: string): boolean {
  const value = toDecimal(amount);
  return value.equals(value.toDecimalPlaces(currencyMinorUnits(currency)));
}

/**
 * `amount` (≥ 0) shared over `weights` (their sum not zero; a weight below zero, usage that nets below
 * nothing, takes a share below zero) in the currency's minor units, by largest remainder: the shares add up
 * to `amount` exactly, and none is above its exact proportion by a whole unit.
 */
export function allocate(amount: Decimal, weights: readonly Decimal[], currency: string): Decimal[] {
  const unit = new Decimal(10).pow(-currencyMinorUnits(currency));
  const whole = weights.reduce((sum, weight) => sum.plus(weight), new Decimal(0));
  const exact = weights.map((weight) => amount.times(weight).dividedBy(whole));
  const shares = exact.map((value) => value.dividedBy(unit).floor().times(unit));
  let left = amount.minus(shares.reduce((sum, share) => sum.plus(share), new Decimal(0))).dividedBy(unit).round().toNumber();
  // The leftover units go to the shares that lost the most to rounding, the earliest first on ties.
  const order = exact.map((value, i) => ({ i, lost: value.minus(shares[i]!) })).sort((a, b) => b.lost.comparedTo(a.lost) || a.i - b.i);
  for (let k = 0; left > 0; k = (k + 1) % order.length, left -= 1) shares[order[k]!.i] = shares[order[k]!.i]!.plus(unit);
  return shares;
}

/** An amount in the currency's minor units, as payment gateways take it (10.50 EUR → 1050). */
export function toMinorUnits(amount: number | string | Decimal, currency: string): number {
  return toDecimal(amount).times(new Decimal(10).pow(currencyMinorUnits(currency))).toNumber();
}

/** Minor units back to an amount, with the currency's digits (1050 EUR → "10.50"). */
export function fromMinorUnits(minor: number, currency: string): string {
  return formatAmount(new Decimal(minor).dividedBy(new Decimal(10).pow(currencyMinorUnits(currency))), currency);
}
