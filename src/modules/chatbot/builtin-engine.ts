/**
 * The built-in engine: a deterministic reading of a finance question into one of the chatbot's queries,
 * with no network. Dates are read by chrono-node and a few period words ("last month", "this quarter");
 * names of customers, meters and contracts are matched against the organisation's own, exactly where the
 * text names them in full and fuzzily (Fuse.js) otherwise. It never guesses: a name that fits several
 * answers with them, and a question it cannot read answers with what it can do.
 */
import * as chrono from 'chrono-node';
import Fuse from 'fuse.js';
import { isCurrency } from '../../domain/currencies';
import type { ChatbotQueryName } from './chatbot-queries';

export interface Named {
  id: string;
  name: string;
}

/** The organisation's names the engine can recognise. */
export interface Directory {
  customers: Named[];
  meters: Array<Named & { metric: string }>;
  contracts: Array<Named & { customerId: string }>;
  /** Customer entities, each with its customer. */
  entities: Array<Named & { customerId: string | null }>;
}

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
const utc = (year: number, month0: number, day: number) => new Date(Date.UTC(year, month0, day));
const monthSpan = (year: number, month0: number): Period => ({ from: iso(utc(year, month0, 1)), to: iso(utc(year, month0 + 1, 0)) });
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH_WORD = /\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b(?:\s+(\d{4}))?/;

/** The period a question names, if any: period words first, then whole months, then dates chrono reads. */
export function periodOf(text: string, today: string): Period | undefined {
  const lower = text.toLowerCase();
  const now = new Date(`${today}T12:00:00Z`);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const quarter = Math.floor(month / 3) * 3;
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
  const named = MONTH_WORD.exec(lower);
  if (named) {
    const month0 = MONTHS.indexOf(named[1]!.slice(0, 3));
    // A month without its year is the latest one not after today.
    const inYear = named[2] ? Number(named[2]) : month0 <= month ? year : year - 1;
    return monthSpan(inYear, month0);
  }
  const yearOnly = /\b(?:in|for|during)\s+(\d{4})\b/.exec(lower);
  if (yearOnly) return { from: `${yearOnly[1]}-01-01`, to: `${yearOnly[1]}-12-31` };
  if (dates.length === 1) return { from: iso(dates[0]!.start.date()), to: iso(dates[0]!.start.date()) };
  return undefined;
}

// ---- names

const normal = (text: string) => ` ${text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;
const STOP = new Set(['the', 'a', 'an', 'of', 'for', 'to', 'in', 'on', 'did', 'does', 'do', 'is', 'was', 'what', 'how', 'much', 'many', 'when', 'which', 'last', 'this', 'month', 'year', 'owe', 'owes', 'use', 'used', 'invoice', 'invoices', 'payment', 'contract', 's', 'and', 'our', 'we', 'me', 'show', 'us', 'has', 'have', 'with', 'by', 'from', 'api', 'calls']);

type Match<T> = { found: T } | { ambiguous: T[] } | { none: true };

/**
 * The item the text names. In full, word for word (the longest name wins; two of the same length are
 * ambiguous); else, when `fuzzy`, by Fuse.js over the text's runs of one to four words, every item scoring
 * within 0.1 of the best being a candidate.
 */
export function mentioned<T extends Named>(text: string, items: readonly T[], fuzzy: boolean, extra: (item: T) => string[] = () => []): Match<T> {
  const body = normal(text);
  const names = (item: T) => [item.name, ...extra(item)].map(normal).filter((name) => name.trim().length > 0);
  const exact = items.map((item) => ({ item, length: Math.max(0, ...names(item).filter((name) => body.includes(name)).map((name) => name.length)) })).filter((hit) => hit.length > 0);
  if (exact.length > 0) {
    const longest = Math.max(...exact.map((hit) => hit.length));
    const best = exact.filter((hit) => hit.length === longest).map((hit) => hit.item);
    return best.length === 1 ? { found: best[0]! } : { ambiguous: best };
  }
  if (!fuzzy || items.length === 0) return { none: true };
  const words = body.trim().split(' ').filter((word) => word.length > 0);
  const runs: string[] = [];
  for (let size = 1; size <= 4; size += 1) {
    for (let i = 0; i + size <= words.length; i += 1) {
      const run = words.slice(i, i + size);
      if (run.every((word) => STOP.has(word)) || run.join('').length < 3) continue;
      runs.push(run.join(' '));
    }
  }
  const fuse = new Fuse(
    items.map((item) => ({ item, names: names(item).map((name) => name.trim()) })),
    { keys: ['names'], includeScore: true, threshold: 0.3, ignoreLocation: true },
  );
  const scores = new Map<T, number>();
  for (const run of runs) {
    for (const hit of fuse.search(run)) scores.set(hit.item.item, Math.min(scores.get(hit.item.item) ?? 1, hit.score ?? 1));
  }
  if (scores.size === 0) return { none: true };
  const best = Math.min(...scores.values());
  const close = [...scores].filter(([, score]) => score <= best + 0.1).map(([item]) => item);
  return close.length === 1 ? { found: close[0]! } : { ambiguous: close };
}

// ---- questions

const has = (text: string, pattern: RegExp) => pattern.test(text.toLowerCase());

/** Reads a question. `today` is the day (UTC) periods are counted from. */
export function readQuestion(text: string, directory: Directory, today: string): Reading {
  const period = periodOf(text, today);
  const customer = (required: boolean) => mentioned(text, directory.customers, required);

  /** A query that names one customer (required), or asks which one. */
  const forCustomer = (name: ChatbotQueryName, extra: Record<string, unknown> = {}): Reading => {
    const match = customer(true);
    if ('found' in match) return { kind: 'query', name, input: { customerId: match.found.id, customerName: match.found.name, ...extra } };
    if ('ambiguous' in match) return { kind: 'candidates', what: 'customer', candidates: match.ambiguous };
    return { kind: 'help', missing: 'the customer' };
  };

  if (has(text, /\b(fx|exchange|rate|convert)\b/)) {
    const codes = [...new Set((text.match(/\b[a-zA-Z]{3}\b/g) ?? []).map((code) => code.toUpperCase()).filter((code) => isCurrency(code)))];
    if (codes.length >= 2) return { kind: 'query', name: 'fx_rate', input: { from: codes[0], to: codes[1], date: period?.from ?? today } };
    return { kind: 'help', missing: 'two currencies' };
  }
  if (has(text, /\b(invoice|billing)\s+runs?\b|\b(last|latest)\s+run\b|\brun_[0-9a-z]+/)) {
    const runId = /\brun_[0-9a-z]+\b/i.exec(text)?.[0];
    return { kind: 'query', name: 'invoice_run', input: runId ? { runId } : {} };
  }
  if (has(text, /\b(usage|used|use|consumed|consumption)\b/)) {
    const meter = mentioned(text, directory.meters, true, (item) => [item.metric.replace(/_/g, ' ')]);
    if ('ambiguous' in meter) return { kind: 'candidates', what: 'meter', candidates: meter.ambiguous };
    if ('none' in meter) return { kind: 'help', missing: 'the meter' };
    if (!period) return { kind: 'help', missing: 'the period' };
    const input: Record<string, unknown> = { meterId: meter.found.id, meterName: meter.found.name, ...period };
    const entity = mentioned(text, directory.entities, false);
    if ('found' in entity) input.customerEntityId = entity.found.id;
    else {
      const who = customer(false);
      if ('ambiguous' in who) return { kind: 'candidates', what: 'customer', candidates: who.ambiguous };
      if ('found' in who) {
        const own = directory.entities.filter((candidate) => candidate.customerId === who.found.id);
        if (own.length > 1) return { kind: 'candidates', what: 'entity', candidates: own };
        if (own.length === 1) input.customerEntityId = own[0]!.id;
        else return { kind: 'help', missing: `an entity of ${who.found.name}` };
      }
    }
    return { kind: 'query', name: 'usage', input };
  }
  if (has(text, /\btop\b.*\bcustomers?\b|\b(biggest|largest|best)\s+customers?\b|\bcustomers?\b.*\bby revenue\b/)) {
    const top = Number(/\btop\s+(\d{1,3})\b/i.exec(text)?.[1] ?? 5);
    const span = period ?? periodOf('this year', today)!;
    return { kind: 'query', name: 'top_customers', input: { ...span, top: Math.min(Math.max(top, 1), 100) } };
  }
  if (has(text, /\b(revenue|income|earned|earnings|turnover|sales)\b/)) {
    return { kind: 'query', name: 'revenue', input: { ...(period ?? periodOf('this month', today)!) } };
  }
  if (has(text, /\bpayments?\b|\bpaid us\b|\bdid .+ pay\b/) && has(text, /\b(last|latest|most recent|recent|when)\b/)) return forCustomer('last_payment');
  if (has(text, /\b(overdue|past due|late)\b/)) {
    const who = customer(false);
    if ('ambiguous' in who) return { kind: 'candidates', what: 'customer', candidates: who.ambiguous };
    return { kind: 'query', name: 'overdue_invoices', input: 'found' in who ? { customerId: who.found.id, customerName: who.found.name } : {} };
  }
  const status = /\b(draft|raised|sent|paid|cancelled|canceled)\b/i.exec(text)?.[1]?.toLowerCase().replace('canceled', 'cancelled');
  if (status && has(text, /\binvoices?\b/)) return { kind: 'query', name: 'invoices_by_status', input: { status, ...(period ?? periodOf('this year', today)!) } };
  if (has(text, /\b(owe|owes|owed|outstanding|unpaid|balance|receivable)\b/)) return forCustomer('outstanding_amount');
  if (has(text, /\b(contract|contracts|renew|renews|renewal|subscription|upcoming invoice|next invoice|plan)\b/)) {
    const named = mentioned(text, directory.contracts, false);
    if ('found' in named) return { kind: 'query', name: 'contract_status', input: { contractId: named.found.id } };
    if ('ambiguous' in named) return { kind: 'candidates', what: 'contract', candidates: named.ambiguous };
    const who = customer(true);
    if ('ambiguous' in who) return { kind: 'candidates', what: 'customer', candidates: who.ambiguous };
    if ('none' in who) return { kind: 'help', missing: 'the contract or its customer' };
    const theirs = directory.contracts.filter((contract) => contract.customerId === who.found.id);
    if (theirs.length === 1) return { kind: 'query', name: 'contract_status', input: { contractId: theirs[0]!.id } };
    if (theirs.length > 1) return { kind: 'candidates', what: 'contract', candidates: theirs };
    return { kind: 'help', missing: `a contract of ${who.found.name}` };
  }
  return { kind: 'help' };
}
