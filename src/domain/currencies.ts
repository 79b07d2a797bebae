import currencyCodes from 'currency-codes';
import { DomainError } from './errors';

export interface Currency {
  code: string;
  name: string;
  numericCode: string;
  minorUnits: number;
}

/**
 * Codes ISO 4217 lists without a minor unit ("N.A."), which the data package gives as 0 digits: precious
 * metals, bond market units, the SDR, the Sucre, the ADB unit, the testing code and "no currency". None is
 * money an invoice can be in.
 */
const NOT_MONEY = new Set(['XAG', 'XAU', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XPD', 'XPT', 'XSU', 'XTS', 'XUA', 'XXX']);

// ISO 4217 from a maintained data package; funds and metals without a minor unit ("N.A.") are left out.
const CURRENCIES: readonly Currency[] = currencyCodes.data
  .filter((entry) => Number.isInteger(entry.digits) && !NOT_MONEY.has(entry.code))
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
