import currencyCodes from 'currency-codes';
import { DomainError } from './errors';

export interface Currency {
  code: string;
  name: string;
  numericCode: string;
  minorUnits: number;
}

// ISO 4217 from a maintained data package; funds and metals without a minor unit ("N.A.") are left out.
const CURRENCIES: readonly Currency[] = currencyCodes.data
  .filter((entry) => Number.isInteger(entry.digits))
  .map((entry) => ({ code: entry.code, name: entry.currency, numericCode: entry.number, minorUnits: entry.digits }))
  .sort((a, b) => a.code.localeCompare(b.code));

const BY_CODE = new Map(CURRENCIES.map((currency) => [currency.code, currency]));

export function listCurrencies(): readonly Currency[] {
  return CURRENCIES;
}

export function isCurrency(code: string): boolean {
  return BY_CODE.has(code);
}

export function currencyMinorUnits(code: string): number {
  const currency = BY_CODE.get(code);
  if (!currency) throw new DomainError(`${code} is not an ISO 4217 currency`);
  return currency.minorUnits;
}
