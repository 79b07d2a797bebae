import { DomainError } from './errors';
import { Decimal, roundToMinor, toDecimal } from './money';

/**
 * Conversion multiplies in full precision (40 significant digits) and rounds once, half-up (away from
 * zero), to the target currency's minor unit: the error is at most half a minor unit.
 */
export function convert(amount: number | string | Decimal, rate: number | string | Decimal, toCurrency: string): Decimal {
  const r = toDecimal(rate);
  if (r.lte(0)) throw new DomainError('an FX rate must be greater than zero');
  return roundToMinor(toDecimal(amount).times(r), toCurrency);
}

/** 1 / rate to 12 significant digits, for a pair quoted only the other way round. */
export function invertRate(rate: number | string | Decimal): Decimal {
  const r = toDecimal(rate);
  if (r.lte(0)) throw new DomainError('an FX rate must be greater than zero');
  return new Decimal(1).dividedBy(r).toSignificantDigits(12, Decimal.ROUND_HALF_UP);
}
