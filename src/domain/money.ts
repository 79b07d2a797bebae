import DecimalBase from 'decimal.js';
import { currencyMinorUnits } from './currencies';
import { DomainError } from './errors';

/** Our own Decimal: 40 significant digits, and nobody else's global configuration. */
export const Decimal = DecimalBase.clone({ precision: 40, rounding: DecimalBase.ROUND_HALF_UP });
export type Decimal = InstanceType<typeof Decimal>;

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Numbers or numeric strings in; never NaN, Infinity or free text. */
export function toDecimal(input: number | string | Decimal | DecimalBase): Decimal {
  if (input instanceof DecimalBase) {
    if (!input.isFinite()) throw new DomainError('invalid_amount', 'amount must be finite');
    return new Decimal(input);
  }
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new DomainError('invalid_amount', 'amount must be finite');
    return new Decimal(input);
  }
  if (typeof input === 'string' && NUMERIC.test(input.trim())) return new Decimal(input.trim());
  throw new DomainError('invalid_amount', `${String(input)} is not a number`);
}

/** Half-up (away from zero) to the currency's minor unit. */
export function roundToMinor(amount: number | string | Decimal, currency: string): Decimal {
  return toDecimal(amount).toDecimalPlaces(currencyMinorUnits(currency), Decimal.ROUND_HALF_UP);
}

/** The output form of money: a string with exactly the currency's decimals ("10.50", JPY "1050"). */
export function formatAmount(amount: number | string | Decimal, currency: string): string {
  return roundToMinor(amount, currency).toFixed(currencyMinorUnits(currency));
}

export function sumAmounts(amounts: ReadonlyArray<number | string | Decimal>): Decimal {
  return amounts.reduce<Decimal>((sum, amount) => sum.plus(toDecimal(amount)), new Decimal(0));
}

/** More decimals than the currency has is an input error, not something to round silently. */
export function hasAtMostMinorUnits(amount: number | string | Decimal, currency: string): boolean {
  const value = toDecimal(amount);
  return value.equals(value.toDecimalPlaces(currencyMinorUnits(currency)));
}
