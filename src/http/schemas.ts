import { Decimal } from 'decimal.js';
import { z } from 'zod';
import { listCurrencies } from '../domain/currencies';
import { instantProblem, numericProblem } from '../domain/storable';
import { InvariantError } from '../domain/errors';
import { ISO_DATE, ISO_DATE_TIME } from '../domain/iso-dates';
import { canonicalLocale, LOCALE_TAG_PATTERN } from '../domain/document-locale';
import { zoneAsRead } from '../domain/zoned-days';

/**
 * The input contract of every route, built from a few factories so that the same parameters drive both
 * the check and the OpenAPI document (`z.toJSONSchema`): a value the document allows is accepted, and one
 * it refuses is answered 400.
 */

/**
 * Text lengths are counted in characters (Unicode code points), as JSON Schema counts `maxLength`, never
 * in UTF-16 units: an emoji is one character.
 */
function withMaxLength<S extends z.ZodString>(schema: S, max: number): S {
  return schema.refine((value) => [...value].length <= max, `must be at most ${max} characters`).meta({ maxLength: max }) as S;
}

// What String.prototype.trim removes, spelled out so that every regular expression engine reads it alike.
const TRIMMED = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
// Storable text holds no NUL character (nor a lone surrogate, which the router refuses before any schema
// runs and which no common regular expression engine can spell; see src/domain/storable.ts).
const UNSTORABLE = '\\u0000';
/** Text with at least one character that is neither blank nor unstorable. */
const NOT_BLANK = new RegExp(`^[^${UNSTORABLE}]*[^${UNSTORABLE}${TRIMMED}][^${UNSTORABLE}]*$`);

/** A name or title: required, not blank, trimmed, at most `max` characters. */
export function text(max: number) {
  return withMaxLength(z.string().regex(NOT_BLANK, 'must not be blank'), max).trim();
}

/** Free text that may be empty (descriptions, comments), kept as given. */
export function freeText(max: number) {
  return withMaxLength(z.string(), max);
}

/** An opaque reference (an id, a key): 1 to `max` characters, kept as given. */
export function reference(max = 64) {
  return withMaxLength(z.string().min(1, { message: 'must not be empty', abort: true }), max);
}

/**
 * A whole number from `min` to `max` sent as a query parameter (text, coerced): `page=abc` or `limit=1.5` is
 * told what the parameter takes, not what zod received.
 */
export function queryInteger(min: number, max = Number.MAX_SAFE_INTEGER) {
  const takes = max === Number.MAX_SAFE_INTEGER ? `must be a whole number from ${min}` : `must be a whole number from ${min} to ${max}`;
  return z.coerce.number({ error: takes }).int({ error: takes }).min(min, { error: takes }).max(max, { error: takes });
}

/** Path ids are opaque strings; an id that names nothing in the caller's organisation answers 404. */
export const idParam = z.object({ id: reference() });

export const timestamps = {
  createdAt: z.string().describe('ISO 8601 date-time'),
  updatedAt: z.string().describe('ISO 8601 date-time'),
};

/**
 * An e-mail address, at most 320 characters (64 for the local part, @, 255 for the domain). The domain's
 * labels are host names' (zod's own pattern lets a label end in `-`): they begin and end with a letter or
 * digit, and have `--` in their third and fourth places only as the `xn--` of an internationalised name.
 */
export const emailAddress = z
  .email({ pattern: /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@(?:(?!(?![xX][nN]--)[A-Za-z0-9]{2}--)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/ })
  .max(320);

/** Days from an invoice's date to its due date: 0 to 365. */
export const paymentTermsDays = z.number().int().min(0).max(365);

export const CURRENCY_CODES = listCurrencies().map((currency) => currency.code) as [string, ...string[]];

/** An ISO 4217 code of the currency list, in upper case; the document lists them. */
export const isoCurrency = z.enum(CURRENCY_CODES, { error: 'must be an ISO 4217 currency code, in upper case' }).describe('ISO 4217 code, e.g. EUR');

export const deletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });

/** The answer of a delete: the id that is gone. */
export const deleted = (id: string) => ({ id, deleted: true as const });

/** A calendar date, YYYY-MM-DD, in the years 0001 to 9999: `2026-02-30` and `0000-01-01` are refused. */
export const isoDate = z.string().regex(ISO_DATE, 'must be a calendar date YYYY-MM-DD in the years 0001 to 9999').meta({ format: 'date' });

/** An instant: an ISO 8601 date-time with a zone, falling in the years 1 to 9999 once in UTC. */
export const isoDateTime = z
  .string()
  .regex(ISO_DATE_TIME, { message: 'must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has', abort: true })
  .refine((value) => !instantProblem(new Date(value)), 'must fall in the years 1 to 9999 (UTC)')
  .meta({ format: 'date-time' });

/** A date or a date-time with a zone. */
export const isoDateOrDateTime = z.union([isoDateTime, isoDate]);

/**
 * The IANA names of today whose zones the runtime's ICU data lists under an earlier name (it lists
 * `Asia/Calcutta`, not `Asia/Kolkata`). The runtime accepts them, and Postgres knows both names.
 */
const CURRENT_ZONE_NAMES = [
  'Africa/Asmara', 'America/Argentina/Buenos_Aires', 'America/Argentina/Catamarca', 'America/Argentina/Cordoba', 'America/Argentina/Jujuy',
  'America/Argentina/Mendoza', 'America/Atikokan', 'America/Indiana/Indianapolis', 'America/Kentucky/Louisville', 'America/Nuuk',
  'Asia/Ho_Chi_Minh', 'Asia/Kathmandu', 'Asia/Kolkata', 'Asia/Yangon', 'Atlantic/Faroe', 'Europe/Kyiv', 'Pacific/Chuuk', 'Pacific/Kanton',
  'Pacific/Pohnpei', 'Etc/UTC',
];

/**
 * The database's other names: links kept for old names (`US/Pacific`, `Asia/Istanbul`), the fixed
 * offsets (`Etc/GMT-14`) and the POSIX-style zones (`EST5EDT`). The runtime lists only canonical zones, but
 * accepts these, and Postgres knows them all.
 */
const LINKED_ZONE_NAMES = [
  'Africa/Timbuktu', 'America/Argentina/ComodRivadavia', 'America/Atka', 'America/Ensenada', 'America/Fort_Wayne',
  'America/Knox_IN', 'America/Montreal', 'America/Nipigon', 'America/Pangnirtung', 'America/Porto_Acre',
  'America/Rainy_River', 'America/Rosario', 'America/Santa_Isabel', 'America/Shiprock', 'America/Thunder_Bay',
  'America/Virgin', 'America/Yellowknife', 'Antarctica/South_Pole', 'Asia/Ashkhabad', 'Asia/Choibalsan',
  'Asia/Chongqing', 'Asia/Chungking', 'Asia/Dacca', 'Asia/Harbin', 'Asia/Istanbul', 'Asia/Kashgar', 'Asia/Macao',
  'Asia/Tel_Aviv', 'Asia/Thimbu', 'Asia/Ujung_Pandang', 'Asia/Ulan_Bator', 'Atlantic/Jan_Mayen', 'Australia/ACT',
  'Australia/Canberra', 'Australia/Currie', 'Australia/LHI', 'Australia/NSW', 'Australia/North',
  'Australia/Queensland', 'Australia/South', 'Australia/Tasmania', 'Australia/Victoria', 'Australia/West',
  'Australia/Yancowinna', 'Brazil/Acre', 'Brazil/DeNoronha', 'Brazil/East', 'Brazil/West', 'CET', 'CST6CDT',
  'Canada/Atlantic', 'Canada/Central', 'Canada/Eastern', 'Canada/Mountain', 'Canada/Newfoundland', 'Canada/Pacific',
  'Canada/Saskatchewan', 'Canada/Yukon', 'Chile/Continental', 'Chile/EasterIsland', 'Cuba', 'EET', 'EST', 'EST5EDT',
  'Egypt', 'Eire', 'Etc/GMT', 'Etc/GMT+0', 'Etc/GMT+1', 'Etc/GMT+10', 'Etc/GMT+11', 'Etc/GMT+12', 'Etc/GMT+2',
  'Etc/GMT+3', 'Etc/GMT+4', 'Etc/GMT+5', 'Etc/GMT+6', 'Etc/GMT+7', 'Etc/GMT+8', 'Etc/GMT+9', 'Etc/GMT-0',
  'Etc/GMT-1', 'Etc/GMT-10', 'Etc/GMT-11', 'Etc/GMT-12', 'Etc/GMT-13', 'Etc/GMT-14', 'Etc/GMT-2', 'Etc/GMT-3',
  'Etc/GMT-4', 'Etc/GMT-5', 'Etc/GMT-6', 'Etc/GMT-7', 'Etc/GMT-8', 'Etc/GMT-9', 'Etc/GMT0', 'Etc/Greenwich',
  'Etc/UCT', 'Etc/Universal', 'Etc/Zulu', 'Europe/Belfast', 'Europe/Nicosia', 'Europe/Tiraspol', 'Europe/Uzhgorod',
  'Europe/Zaporozhye', 'GB', 'GB-Eire', 'GMT', 'GMT+0', 'GMT-0', 'GMT0', 'Greenwich', 'HST', 'Hongkong', 'Iceland',
  'Iran', 'Israel', 'Jamaica', 'Japan', 'Kwajalein', 'Libya', 'MET', 'MST', 'MST7MDT', 'Mexico/BajaNorte',
  'Mexico/BajaSur', 'Mexico/General', 'NZ', 'NZ-CHAT', 'Navajo', 'PRC', 'PST8PDT', 'Pacific/Johnston',
  'Pacific/Samoa', 'Pacific/Yap', 'Poland', 'Portugal', 'ROC', 'ROK', 'Singapore', 'Turkey', 'UCT', 'US/Alaska',
  'US/Aleutian', 'US/Arizona', 'US/Central', 'US/East-Indiana', 'US/Eastern', 'US/Hawaii', 'US/Indiana-Starke',
  'US/Michigan', 'US/Mountain', 'US/Pacific', 'US/Samoa', 'Universal', 'W-SU', 'WET', 'Zulu',
];

function runtimeKnows(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Zones as the time-zone database names them, in its earlier and its current names and its links: what
 * organisations, customers, schedules and usage queries take. A name Postgres would read as a fixed
 * offset all year (`CET`) is taken as the zone it links to, and kept and answered as that (`Europe/Brussels`).
 */
export const ianaTimeZone = z
  .enum([...new Set(['UTC', ...Intl.supportedValuesOf('timeZone'), ...CURRENT_ZONE_NAMES.filter(runtimeKnows), ...LINKED_ZONE_NAMES.filter(runtimeKnows)])], { error: 'must be an IANA time zone' })
  .transform(zoneAsRead);

export interface DecimalColumn {
  /** NUMERIC(precision, scale) of the column the value is stored in. */
  precision: number;
  scale: number;
  /** `positive`: > 0; `nonNegative`: ≥ 0; otherwise any sign. */
  sign?: 'positive' | 'nonNegative';
  /** An inclusive upper bound that is a power of ten (100 for percentages); the column's range otherwise. */
  max?: number;
  /**
   * Fewer integer digits than the column allows, where a product of this value with another must fit a
   * column too (quantity × price → amount).
   */
  integerDigits?: number;
}

/** The text form of a decimal: plain digits, no exponent, as many zeros in front or after as you like. */
function decimalPattern({ scale, sign, max }: DecimalColumn, integerDigits: number): string {
  const fraction = scale > 0 ? `(?:\\.\\d{1,${scale}}0*)?` : '(?:\\.0+)?';
  const fractionOnly = scale > 0 ? `\\.\\d{1,${scale}}0*` : undefined;
  const maxDigits = max === undefined ? integerDigits : Math.log10(max);
  const nonZeroInteger = `0*[1-9]\\d{0,${maxDigits - 1}}${fraction}`;
  const exactMax = max === undefined ? [] : [`0*${max}(?:\\.0+)?`];
  if (sign === 'positive') {
    const smallFraction = scale > 0 ? [`0*\\.\\d{0,${scale - 1}}[1-9]0*`] : [];
    return `^\\+?(?:${[nonZeroInteger, ...exactMax, ...smallFraction].join('|')})$`;
  }
  const zero = `0+${fraction}`;
  const alternatives = [nonZeroInteger, ...exactMax, zero, ...(fractionOnly ? [fractionOnly] : [])];
  return `^${sign === 'nonNegative' ? '\\+?' : '[+-]?'}(?:${alternatives.join('|')})$`;
}

const DECIMAL_TEXT_MAX = 64;

/**
 * Money, quantities, prices and rates: a JSON number or a numeric string in, a canonical decimal string
 * out (`"0.9200"` → `"0.92"`), never through a binary float beyond the JSON parser's own. The value must fit
 * its column exactly: more integer digits or more decimals than the column holds is refused, never rounded.
 */
/** Why a JSON number past 2^53 is refused: the parser has rounded it already (9007199254740993 reads as …992). */
export const UNSAFE_NUMBER = `a JSON number beyond ${Number.MAX_SAFE_INTEGER} cannot be read exactly: send it as a string`;

export function decimal(column: DecimalColumn) {
  const { precision, scale, sign, max } = column;
  const integerDigits = column.integerDigits ?? precision - scale;
  if (max !== undefined && (!Number.isInteger(Math.log10(max)) || Math.log10(max) >= integerDigits)) {
    throw new InvariantError(`decimal max must be a power of ten below the column's range: ${max}`);
  }
  const pattern = decimalPattern(column, integerDigits);
  const textForm = new RegExp(pattern);
  // A number of the right form but the wrong sign (-10, 0) is told its sign, not the form it already has.
  const signedForm = new RegExp(decimalPattern({ ...column, sign: undefined, max: undefined }, integerDigits));
  const signProblem = sign === 'positive' ? 'must be greater than 0' : 'must not be negative';
  const limit = 10 ** integerDigits;
  const problem = (value: Decimal): string | undefined => {
    if (sign === 'positive' && !value.gt(0)) return 'must be greater than 0';
    if (sign === 'nonNegative' && value.isNeg() && !value.isZero()) return 'must not be negative';
    if (max !== undefined && value.gt(max)) return `must be at most ${max}`;
    if (value.decimalPlaces() > scale) return `must have at most ${scale} decimal places`;
    return numericProblem(value.toFixed(), integerDigits + scale, scale);
  };
  // A JSON number is read as a double: past 2^53 its digits are already lost when the body is parsed, so a
  // column wider than that takes its larger values as text only.
  const exact = limit > Number.MAX_SAFE_INTEGER;
  const numberForm = {
    type: 'number',
    ...(sign === 'positive' ? { exclusiveMinimum: 0 } : sign === 'nonNegative' ? { minimum: 0 } : exact ? { minimum: -Number.MAX_SAFE_INTEGER } : { exclusiveMinimum: -limit }),
    ...(max !== undefined ? { maximum: max } : exact ? { maximum: Number.MAX_SAFE_INTEGER } : { exclusiveMaximum: limit }),
    multipleOf: Number(`1e-${scale}`),
  };
  const stringForm = { type: 'string', maxLength: DECIMAL_TEXT_MAX, pattern };
  const notDecimal = `must be a decimal number with at most ${integerDigits} digits before the point and ${scale} after it`;
  return z
    // Neither a number nor text (true, null, an array) is told what is wanted; a missing one keeps zod's word.
    .union([z.number(), z.string()], { error: (issue) => (issue.input === undefined ? undefined : notDecimal) })
    .transform((input, ctx) => {
      if (typeof input === 'string' && (input.length > DECIMAL_TEXT_MAX || !textForm.test(input))) {
        const signed = sign !== undefined && input.length <= DECIMAL_TEXT_MAX && signedForm.test(input) ? new Decimal(input) : undefined;
        const wrongSign = signed !== undefined && (sign === 'positive' ? signed.lte(0) : signed.isNeg() && !signed.isZero());
        ctx.addIssue({ code: 'custom', message: wrongSign ? signProblem : notDecimal });
        return z.NEVER;
      }
      const value = new Decimal(input);
      // What the column cannot hold is said first; a number it could hold but that JSON cannot carry exactly, then.
      const found = problem(value) ?? (typeof input === 'number' && Math.abs(input) > Number.MAX_SAFE_INTEGER ? UNSAFE_NUMBER : undefined);
      if (found) {
        ctx.addIssue({ code: 'custom', message: found });
        return z.NEVER;
      }
      return value.toFixed();
    })
    .meta({ anyOf: [numberForm, stringForm], description: `A decimal number or numeric string: at most ${integerDigits} digits before the point, ${scale} after it` });
}

/** Any JSON object: free-form details whose keys and text must be storable. */
export const jsonObject = z.record(z.string(), z.unknown());

/**
 * A body that changes some fields: at least one of them must be given. The document says the same with
 * one `required` alternative per field, except for an object nested in a nullable one (`{ inAlternative:
 * true }`): there OpenAPI tools no longer see the properties those alternatives require, so the rule is
 * left to the description.
 */
export function atLeastOne<Shape extends z.ZodRawShape>(shape: Shape, { inAlternative = false } = {}) {
  const keys = Object.keys(shape);
  const checked = z
    .object(shape)
    .refine((body) => keys.some((key) => (body as Record<string, unknown>)[key] !== undefined), `give at least one of ${keys.join(', ')}`);
  return inAlternative ? checked.describe(`at least one of ${keys.join(', ')}`) : checked.meta({ anyOf: keys.map((key) => ({ required: [key] })) });
}

/** Two fields of one object that must be in order (`from` ≤ `to`), refused at the later field's path. */
export function ordered<T extends z.ZodType>(schema: T, from: string, to: string, compare: (a: string, b: string) => number = (a, b) => (a < b ? -1 : a > b ? 1 : 0)) {
  return schema.superRefine((value, ctx) => {
    const record = value as Record<string, unknown>;
    const [start, end] = [record[from], record[to]];
    if (typeof start === 'string' && typeof end === 'string' && compare(start, end) > 0) {
      ctx.addIssue({ code: 'custom', path: [to], message: `must not be before ${from}` });
    }
  });
}

/** Instants compare by time, whatever their zones. */
export const byInstant = (a: string, b: string) => Date.parse(a) - Date.parse(b);

/** A BCP 47 locale the runtime has data for (`en-GB`, `de-DE`), kept in its canonical form. */
export const localeTag = z
  .string()
  .max(35)
  .regex(new RegExp(LOCALE_TAG_PATTERN), 'must be a BCP 47 locale tag the service knows, e.g. en-GB or de-DE')
  .transform((value, ctx) => {
    const canonical = canonicalLocale(value);
    if (canonical === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be a BCP 47 locale tag the service knows, e.g. en-GB or de-DE' });
      return z.NEVER;
    }
    return canonical;
  })
  .meta({ examples: ['en-GB', 'de-DE', 'en-US'] })
  .describe('a BCP 47 locale tag, e.g. en-GB or de-DE: the separators of numbers and the form of dates on invoices and credit notes');
