import { currencyMinorUnits } from './currencies';
import { toDecimal } from './money';

/**
 * How finance documents write numbers, dates and addresses for a locale (a BCP 47 tag: en-GB, de-DE).
 * Numbers and dates follow the locale (Intl, the runtime's ICU data); addresses follow the country of the
 * address, whatever the locale. Every output is in Latin digits and in characters of the Latin subset of
 * the font the PDF embeds (Basic Latin, Latin-1, general punctuation).
 */

/** The locale of an organisation that has not chosen one: US English. */
export const DEFAULT_LOCALE = 'en-US';

const hasData = (tag: string) => {
  try {
    return Intl.NumberFormat.supportedLocalesOf([tag]).length > 0;
  } catch {
    return false;
  }
};

/** Languages of three letters that have no two-letter code (Filipino, Cantonese, ...). */
const THREE_LETTER_LANGUAGES = [
  'agq', 'ars', 'asa', 'ast', 'bas', 'bem', 'bez', 'bgc', 'bho', 'blo', 'brx', 'bua', 'ccp', 'ceb', 'cgg', 'chr',
  'ckb', 'csw', 'dav', 'dje', 'doi', 'dsb', 'dua', 'dyo', 'ebu', 'ewo', 'fil', 'fur', 'gaa', 'gsw', 'guz', 'haw',
  'hsb', 'jgo', 'jmc', 'kab', 'kam', 'kde', 'kea', 'kgp', 'khq', 'kkj', 'kln', 'kok', 'ksb', 'ksf', 'ksh', 'kxv',
  'lij', 'lmo', 'lrc', 'luo', 'luy', 'mai', 'mas', 'mer', 'mfe', 'mgh', 'mni', 'mua', 'mzn', 'naq', 'nds', 'nmg',
  'nnh', 'nqo', 'nso', 'nus', 'nyn', 'pcm', 'pms', 'prg', 'raj', 'rof', 'rwk', 'sah', 'saq', 'sat', 'sbp', 'scn',
  'seh', 'ses', 'shi', 'shn', 'smn', 'syr', 'szl', 'teo', 'tok', 'twq', 'tyv', 'tzm', 'vai', 'vec', 'vmw', 'vun',
  'wae', 'xnr', 'xog', 'yav', 'yrl', 'yue', 'zgh',
];

/**
 * The language subtags the runtime has number and date data for: every two-letter code it knows, and the
 * three-letter ones above that it knows.
 */
const LANGUAGES: readonly string[] = (() => {
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const two = [...letters].flatMap((first) => [...letters].map((second) => `${first}${second}`));
  return [...two, ...THREE_LETTER_LANGUAGES].filter(hasData);
})();

/**
 * The locale tags taken: a language the runtime has data for, then optionally a script (`Latn`) and a
 * region (`GB`, `419`), in any letter case. Every tag it matches is one the runtime formats for, so the
 * document's pattern and the service agree.
 */
export const LOCALE_TAG_PATTERN = `^(?:${LANGUAGES.join('|')})(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?$`;
const localeTagShape = new RegExp(LOCALE_TAG_PATTERN);

/**
 * The canonical form of a BCP 47 tag (`en-gb` → `en-GB`), or undefined when it is not one of the form
 * `LOCALE_TAG_PATTERN` takes or the runtime has no data for it.
 */
export function canonicalLocale(tag: string): string | undefined {
  if (!localeTagShape.test(tag)) return undefined;
  try {
    const [canonical] = Intl.getCanonicalLocales(tag);
    if (!canonical || Intl.NumberFormat.supportedLocalesOf([canonical]).length === 0) return undefined;
    return canonical;
  } catch {
    return undefined;
  }
}

/**
 * Kept to the characters every PDF font of Latin text has: narrow and thin no-break spaces (French and
 * Swiss groups) become a no-break space, the minus sign a hyphen, direction marks go.
 */
function drawable(text: string): string {
  return text.replace(/[\u202f\u2009\u2007]/g, '\u00a0').replace(/\u2212/g, '-').replace(/[\u200e\u200f\u061c]/g, '');
}

const numberFormats = new Map<string, Intl.NumberFormat>();

function numberFormat(locale: string, minimumFractionDigits: number, maximumFractionDigits: number): Intl.NumberFormat {
  const key = `${locale}|${minimumFractionDigits}|${maximumFractionDigits}`;
  let format = numberFormats.get(key);
  if (!format) {
    format = new Intl.NumberFormat(locale, { minimumFractionDigits, maximumFractionDigits, numberingSystem: 'latn' });
    if (numberFormats.size > 1000) numberFormats.clear();
    numberFormats.set(key, format);
  }
  return format;
}

/**
 * A decimal in the locale's separators, exactly: Intl reads the decimal string itself, never a float, so
 * 20 integer digits stay whole. `minimum`..`maximum` decimals are shown.
 */
export function localeNumber(value: string, locale: string, minimum: number, maximum: number): string {
  const exact = toDecimal(value).toFixed() as unknown as number; // Intl.NumberFormat v3 takes the decimal string.
  return drawable(numberFormat(locale, minimum, maximum).format(exact));
}

/** An amount with exactly the currency's minor-unit decimals: `105079` in GBP and en-GB is `105,079.00`, in de-DE `105.079,00`. */
export function localeAmount(amount: string, currency: string, locale: string): string {
  const digits = currencyMinorUnits(currency);
  return localeNumber(toDecimal(amount).toFixed(digits), locale, digits, digits);
}

/** A quantity as it was given (up to 6 decimals), with the locale's separators: `1500.5` → `1,500.5`. */
export function localeQuantity(quantity: string, locale: string): string {
  return localeNumber(quantity, locale, 0, 6);
}

/** A unit price: at least the currency's decimals, up to the 10 a price may carry. */
export function localePrice(price: string, currency: string, locale: string): string {
  return localeNumber(price, locale, currencyMinorUnits(currency), 10);
}

/** A calendar day (YYYY-MM-DD) in the locale's numeric form: 05/11/2026 (en-GB), 05.11.2026 (de-DE), 11/05/2026 (en-US). */
export function localeDate(day: string, locale: string): string {
  const [year, month, date] = day.slice(0, 10).split('-').map(Number);
  const instant = new Date(Date.UTC(2000, month! - 1, date!));
  instant.setUTCFullYear(year!);
  return drawable(new Intl.DateTimeFormat(locale, { year: 'numeric', month: '2-digit', day: '2-digit', timeZone: 'UTC', numberingSystem: 'latn' }).format(instant));
}

/** A country's name in the locale, in English where the locale's script cannot be drawn; the code itself when unknown. */
export function countryName(code: string, locale: string): string {
  const name = (tag: string) => {
    try {
      return new Intl.DisplayNames([tag], { type: 'region', fallback: 'code' }).of(code) ?? code;
    } catch {
      return code;
    }
  };
  const local = drawable(name(locale));
  return /^[\u0020-\u00ff]*$/.test(local) ? local : name('en');
}

export interface PostalAddress {
  line1: string;
  line2?: string | null;
  city: string;
  state?: string | null;
  postalCode?: string | null;
  /** ISO 3166-1 alpha-2. */
  country: string;
}

/**
 * How a country writes the lines after the street, by style:
 * - `town-then-postcode`: the town, the county (if given), then the postcode, each on its own line (GB, IE);
 * - `city-state-zip`: `City, ST 12345` on one line (US);
 * - `city-state-postcode`: `City ST Postcode` on one line (CA, AU, NZ);
 * - `postcode-city`: `Postcode City` on one line, the state or province (if given) on the next (most of
 *   Europe and Latin America, and every country not listed).
 */
export type AddressStyle = 'town-then-postcode' | 'city-state-zip' | 'city-state-postcode' | 'postcode-city';

export const ADDRESS_STYLES: Readonly<Record<string, AddressStyle>> = {
  GB: 'town-then-postcode',
  IE: 'town-then-postcode',
  US: 'city-state-zip',
  CA: 'city-state-postcode',
  AU: 'city-state-postcode',
  NZ: 'city-state-postcode',
};

/** Every country not in ADDRESS_STYLES. */
export const DEFAULT_ADDRESS_STYLE: AddressStyle = 'postcode-city';

const joined = (parts: Array<string | null | undefined>, separator = ' ') => parts.filter((part): part is string => Boolean(part?.trim())).join(separator);

/**
 * The lines of a postal address in the format of its country (ADDRESS_STYLES), the country's name (in
 * the document's locale) last.
 */
export function addressLines(address: PostalAddress, locale: string): string[] {
  const { city, state, postalCode } = address;
  const style = ADDRESS_STYLES[address.country] ?? DEFAULT_ADDRESS_STYLE;
  const place =
    style === 'town-then-postcode'
      ? [city, state, postalCode]
      : style === 'city-state-zip'
        ? [joined([joined([city, joined([state, postalCode])], ', ')])]
        : style === 'city-state-postcode'
          ? [joined([city, state, postalCode])]
          : [joined([postalCode, city]), state];
  return [address.line1, address.line2, ...place, countryName(address.country, locale)].filter((line): line is string => Boolean(line?.trim()));
}
