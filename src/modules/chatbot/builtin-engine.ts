/**
 * The built-in engine: a deterministic reading of a finance question into one of the chatbot's queries,
 * with no network. Dates are read by chrono-node and a few period words ("last month", "this quarter");
 * names of customers, meters and contracts are matched against the organisation's own, exactly where the
 * text names them in full and fuzzily (Fuse.js) otherwise. It never guesses: a name that fits several
 * answers with them, and a question it cannot read answers with what it can do.
 */
import * as chrono from 'chrono-node';
import { isCurrency } from '../../domain/currencies';
import type { ChatbotQueryName } from './chatbot-queries';
import { mentioned, wordsOf, type Directory, type Named } from './mentions';

export type Reading =
  | { kind: 'query'; name: ChatbotQueryName; input: Record<string, unknown> }
  | { kind: 'candidates'; what: 'customer' | 'meter' | 'contract' | 'entity'; candidates: Named[] }
  | { kind: 'help'; missing?: string };

/** Examples the help answer offers, one per question the engine reads. */
export const EXAMPLES = [
  'How much does Acme owe?',
  'Which invoices are overdue?',
  'Paid invoices last month',
  'What was revenue in October 2026?',
  'Top 5 customers by revenue this year',
  'How many API calls did Acme use last month?',
  "What is the status of Acme's contract?",
  "When was Acme's last payment?",
  'EUR to USD exchange rate on 1 October 2026',
  'What was the result of the last invoice run?',
] as const;

// ---- periods

interface Period {
  from: string;
  to: string;
}

const iso = (date: Date) => date.toISOString().slice(0, 10);
/** A UTC day; unlike Date.UTC, years 0 to 99 stay themselves. */
function utc(year: number, month0: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month0, day);
  return date;
}
const monthSpan = (year: number, month0: number): Period => ({ from: iso(utc(year, month0, 1)), to: iso(utc(year, month0 + 1, 0)) });
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH_WORD = /\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b(?:\s+(\d{4}))?/;

const MONTH_NAME = '(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)';

/**
 * Throws a RangeError for a day no calendar holds that the question writes ("2026-02-30", "31 February
 * 2026", "April 31"): read leniently, it would become another day (chrono moves 31 February to the 1st,
 * and "in 2026-02-30" would read as the year). Without a year, 29 February is a day.
 */
function refuseImpossibleDays(lower: string): void {
  const check = (year: number | undefined, month0: number, day: number, written: string) => {
    const last = month0 === 1 && year === undefined ? 29 : utc(year ?? 2000, month0 + 1, 0).getUTCDate();
    if (month0 < 0 || month0 > 11 || day < 1 || day > last) throw new RangeError(`no calendar holds ${written}`);
  };
  for (const match of lower.matchAll(/\b(\d{4})-(\d{1,2})-(\d{1,2})\b/g)) check(Number(match[1]), Number(match[2]) - 1, Number(match[3]), match[0]);
  for (const match of lower.matchAll(new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH_NAME}\\b(?:\\s+(\\d{4})\\b)?`, 'g'))) {
    check(match[3] ? Number(match[3]) : undefined, MONTHS.indexOf(match[2]!.slice(0, 3)), Number(match[1]), match[0]);
  }
  for (const match of lower.matchAll(new RegExp(`\\b${MONTH_NAME}\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b(?:,?\\s+(\\d{4})\\b)?`, 'g'))) {
    check(match[3] ? Number(match[3]) : undefined, MONTHS.indexOf(match[1]!.slice(0, 3)), Number(match[2]), match[0]);
  }
}

/**
 * The period a question names, if any: period words first, then whole months, then dates chrono reads. A
 * day no calendar holds throws a RangeError (the question answers with help).
 */
export function periodOf(text: string, today: string): Period | undefined {
  const lower = text.toLowerCase();
  refuseImpossibleDays(lower);
  const now = new Date(`${today}T12:00:00Z`);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const quarter = Math.floor(month / 3) * 3;
  const named = MONTH_WORD.exec(lower);
  const monthOf = (match: RegExpExecArray) => MONTHS.indexOf(match[1]!.slice(0, 3));
  // A month with "last year" or "this year": that month of that year.
  if (named && !named[2] && /\b(last|this) year\b/.test(lower)) return monthSpan(/\blast year\b/.test(lower) ? year - 1 : year, monthOf(named));
  // From one month to another ("from January to March 2026").
  const range = /\b(?:from\s+)?(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b(?:\s+(\d{4}))?\s+(?:to|until|through|-)\s+(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b(?:\s+(\d{4}))?/.exec(lower);
  if (range) {
    const endYear = range[4] ? Number(range[4]) : year;
    const first = MONTHS.indexOf(range[1]!.slice(0, 3));
    const last = MONTHS.indexOf(range[3]!.slice(0, 3));
    const startYear = range[2] ? Number(range[2]) : first <= last ? endYear : endYear - 1;
    return { from: monthSpan(startYear, first).from, to: monthSpan(endYear, last).to };
  }
  // "between 1 and 15 October (2026)": days of one month.
  const days = new RegExp(`\\bbetween\\s+(\\d{1,2})(?:st|nd|rd|th)?\\s+and\\s+(\\d{1,2})(?:st|nd|rd|th)?\\s+${MONTH_NAME}\\b(?:\\s+(\\d{4})\\b)?`).exec(lower);
  if (days) {
    const month0 = MONTHS.indexOf(days[3]!.slice(0, 3));
    const inYear = days[4] ? Number(days[4]) : month0 <= month ? year : year - 1;
    const last = utc(inYear, month0 + 1, 0).getUTCDate();
    if (Number(days[1]) < 1 || Number(days[2]) > last) throw new RangeError(`no calendar holds ${days[0]}`);
    return { from: iso(utc(inYear, month0, Number(days[1]))), to: iso(utc(inYear, month0, Number(days[2]))) };
  }
  const quarterOf = /\bq([1-4])(?:\s+(\d{4}))?\b/.exec(lower);
  if (quarterOf) {
    const start = (Number(quarterOf[1]) - 1) * 3;
    const inYear = quarterOf[2] ? Number(quarterOf[2]) : year;
    return { from: iso(utc(inYear, start, 1)), to: iso(utc(inYear, start + 3, 0)) };
  }
  if (/\blast month\b/.test(lower)) return monthSpan(year, month - 1);
  if (/\bthis month\b/.test(lower)) return monthSpan(year, month);
  if (/\blast quarter\b/.test(lower)) return { from: iso(utc(year, quarter - 3, 1)), to: iso(utc(year, quarter, 0)) };
  if (/\bthis quarter\b/.test(lower)) return { from: iso(utc(year, quarter, 1)), to: iso(utc(year, quarter + 3, 0)) };
  if (/\blast year\b/.test(lower)) return { from: `${year - 1}-01-01`, to: `${year - 1}-12-31` };
  if (/\b(this year|year to date|ytd)\b/.test(lower)) return { from: `${year}-01-01`, to: `${year}-12-31` };
  const since = /\bsince\s+(.+)$/.exec(lower);
  if (since) {
    const start = chrono.parseDate(since[1]!, now, { forwardDate: false });
    if (start) return { from: iso(start), to: today };
  }
  const dates = chrono.parse(text, now, { forwardDate: false }).filter((result) => result.start.isCertain('day'));
  if (dates.length >= 2) return { from: iso(dates[0]!.start.date()), to: iso(dates[1]!.start.date()) };
  if (dates.length === 1 && dates[0]!.end) return { from: iso(dates[0]!.start.date()), to: iso(dates[0]!.end.date()) };
  // A day written with its month's name ("15 October 2026") is that day, not its month; without its year,
  // the latest such day not after today, as a month's name without its year is.
  const day = dates.length === 1 && (!named || MONTH_WORD.test(dates[0]!.text.toLowerCase())) ? dates[0]! : undefined;
  if (day) {
    const date = day.start.date();
    if (!day.start.isCertain('year') && iso(date) > today) date.setUTCFullYear(date.getUTCFullYear() - 1);
    return { from: iso(date), to: iso(date) };
  }
  if (named) {
    const month0 = monthOf(named);
    // A month without its year is the latest one not after today.
    const inYear = named[2] ? Number(named[2]) : month0 <= month ? year : year - 1;
    return monthSpan(inYear, month0);
  }
  const yearOnly = /\b(?:in|for|during|year)\s+(\d{4})\b/.exec(lower);
  if (yearOnly) return { from: `${yearOnly[1]}-01-01`, to: `${yearOnly[1]}-12-31` };
  return undefined;
}

// ---- names


// ---- questions

const has = (text: string, pattern: RegExp) => pattern.test(text.toLowerCase());

/** Reads a question. `today` is the day (in the organisation's time zone) periods are counted from. */
export function readQuestion(text: string, directory: Directory, today: string): Reading {
  const period = periodOf(text, today);
  const complete = directory.complete !== false;
  // Words of the other names a question may write beside a customer's ("Acme API calls"): not read as the customer's.
  const otherWords = wordsOf([
    ...directory.meters.flatMap((meter) => [meter.name, meter.metric.replace(/_/g, ' ')]),
    ...directory.contracts.map((contract) => contract.name),
    ...directory.entities.map((entity) => entity.name),
  ]);
  const customer = () => mentioned(text, directory.customers, true, () => [], complete, otherWords);

  /** A query that names one customer (required), or asks which one. */
  const forCustomer = (name: ChatbotQueryName, extra: Record<string, unknown> = {}): Reading => {
    const match = customer();
    if ('found' in match) return { kind: 'query', name, input: { customer: match.found.id, ...extra } };
    if ('ambiguous' in match) return { kind: 'candidates', what: 'customer', candidates: match.ambiguous };
    return { kind: 'help', missing: 'the customer' };
  };
  /** A query about all customers, or about the one the question names. */
  const forAnyCustomer = (name: ChatbotQueryName, input: Record<string, unknown>): Reading => {
    const match = customer();
    if ('ambiguous' in match) return { kind: 'candidates', what: 'customer', candidates: match.ambiguous };
    return { kind: 'query', name, input: 'found' in match ? { ...input, customer: match.found.id } : input };
  };

  // Currency codes are written in capitals: "EUR to USD", "EUR/USD".
  const codes = [...new Set((text.match(/\b[A-Z]{3}\b/g) ?? []).filter((code) => isCurrency(code)))];
  if (codes.length >= 2 && has(text, /\b(fx|exchange|rates?|convert|conversion)\b/)) {
    return { kind: 'query', name: 'fx_rate', input: { from: codes[0], to: codes[1], date: period?.from ?? today } };
  }
  if (has(text, /\b(invoice|billing)\s+runs?\b|\b(last|latest)\s+run\b|\brun_[0-9a-z]+/)) {
    const runId = /\brun_[0-9a-z]+\b/i.exec(text)?.[0];
    return { kind: 'query', name: 'invoice_run', input: runId ? { runId } : {} };
  }
  if (has(text, /\b(usage|used|use|consumed|consumption)\b/)) {
    const meter = mentioned(text, directory.meters, true, (item) => [item.metric.replace(/_/g, ' ')], complete);
    if ('ambiguous' in meter) return { kind: 'candidates', what: 'meter', candidates: meter.ambiguous };
    if ('none' in meter) return { kind: 'help', missing: 'the meter' };
    if (!period) return { kind: 'help', missing: 'the period' };
    const input: Record<string, unknown> = { meter: meter.found.id, ...period };
    // "by model", "per model and direction": the meter's own dimensions, in the order the question names them.
    const dimensions = dimensionsAsked(text, meter.found.groupBy ?? []);
    if (dimensions.length > 0) input.groupBy = dimensions;
    const entity = mentioned(text, directory.entities, false);
    if ('found' in entity) return { kind: 'query', name: 'usage', input: { ...input, entity: entity.found.id } };
    const who = customer();
    if ('ambiguous' in who) return { kind: 'candidates', what: 'customer', candidates: who.ambiguous };
    if ('none' in who) return { kind: 'query', name: 'usage', input };
    const own = directory.entities.filter((candidate) => candidate.customerId === who.found.id);
    if (own.length > 1) return { kind: 'candidates', what: 'entity', candidates: own };
    if (own.length === 0) return { kind: 'help', missing: `an entity of ${who.found.name}` };
    return { kind: 'query', name: 'usage', input: { ...input, entity: own[0]!.id } };
  }
  if (has(text, /\btop\b.*\bcustomers?\b|\b(biggest|largest|best)\s+customers?\b|\bcustomers?\b.*\bby revenue\b/)) {
    const top = Number(/\btop\s+(\d{1,3})\b/i.exec(text)?.[1] ?? 5);
    const span = period ?? periodOf('this year', today)!;
    return { kind: 'query', name: 'top_customers', input: { ...span, top: Math.min(Math.max(top, 1), 100) } };
  }
  if (has(text, /\b(revenue|income|earned|earnings|turnover|sales)\b/)) {
    // Revenue is the organisation's: one customer's is not a question the engine answers, nor is it
    // answered with the whole organisation's when the customer named is not sure.
    if (!('none' in customer())) return { kind: 'help', missing: 'revenue of one customer (ask for the top customers instead)' };
    return { kind: 'query', name: 'revenue', input: { ...(period ?? periodOf('this month', today)!) } };
  }
  if (has(text, /\bpayments?\b|\bpaid us\b|\bdid .+ pay\b/) && has(text, /\b(last|latest|most recent|recent|when)\b/)) return forCustomer('last_payment');
  if (has(text, /\b(overdue|past due|late)\b/)) return forAnyCustomer('overdue_invoices', {});
  const status = /\b(draft|raised|sent|paid|cancelled|canceled)\b/i.exec(text)?.[1]?.toLowerCase().replace('canceled', 'cancelled');
  if (status && has(text, /\binvoices?\b/)) return forAnyCustomer('invoices_by_status', { status, ...(period ?? periodOf('this year', today)!) });
  if (has(text, /\b(owe|owes|owed|outstanding|unpaid|balance|receivable)\b/)) return forCustomer('outstanding_amount');
  if (has(text, /\b(contract|contracts|renew|renews|renewal|subscription|upcoming invoice|next invoice|plan)\b/)) {
    const who = customer();
    if ('ambiguous' in who) return { kind: 'candidates', what: 'customer', candidates: who.ambiguous };
    // The named customer's contracts, else every contract, by the names written in the question.
    const among = 'found' in who ? directory.contracts.filter((contract) => contract.customerId === who.found.id) : directory.contracts;
    const named = mentioned(text, among, false);
    if ('found' in named) return { kind: 'query', name: 'contract_status', input: { contract: named.found.id } };
    if ('ambiguous' in named) return { kind: 'candidates', what: 'contract', candidates: named.ambiguous };
    if (!('found' in who)) return { kind: 'help', missing: 'the contract or its customer' };
    if (among.length === 1) return { kind: 'query', name: 'contract_status', input: { contract: among[0]!.id } };
    if (among.length > 1) return { kind: 'candidates', what: 'contract', candidates: among };
    return { kind: 'help', missing: `a contract of ${who.found.name}` };
  }
  return { kind: 'help' };
}

/** The meter's dimensions a question splits by: each named after "by" or "per" (or an "and" that follows one), in the question's order. */
export function dimensionsAsked(text: string, dimensions: readonly string[]): string[] {
  const lower = text.toLowerCase();
  const found: Array<{ key: string; at: number }> = [];
  for (const key of dimensions) {
    const word = key.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = new RegExp(`\\b(?:by|per)\\s+(?:[\\p{L}\\p{N}_.-]+(?:\\s*,\\s*|\\s+and\\s+))*${word}(?![\\p{L}\\p{N}_])`, 'u').exec(lower);
    if (match) found.push({ key, at: match.index + match[0].length });
  }
  return found.sort((a, b) => a.at - b.at).map((entry) => entry.key);
}
