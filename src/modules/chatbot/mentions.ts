/**
 * Names in a question: the organisation's customers, meters, contracts and entities, matched where the
 * text names them in full, or fuzzily (Fuse.js). The built-in engine and the chatbot's queries both read them.
 */
import Fuse from 'fuse.js';

export interface Named {
  id: string;
  name: string;
}

/** The organisation's names the engine can recognise. */
export interface Directory {
  customers: Named[];
  /** Meters, each with its metric and the dimensions its usage splits by. */
  meters: Array<Named & { metric: string; groupBy?: string[] }>;
  contracts: Array<Named & { customerId: string }>;
  /** Customer entities, each with its customer. */
  entities: Array<Named & { customerId: string | null }>;
  /** false: some names were not read (too many), so that no fuzzy match is taken for sure. */
  complete?: boolean;
}

const normal = (text: string) => ` ${text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;
/** The words questions are made of: never read as (part of) a name. */
const STOP = new Set(
  (
    'the a an of for to in on at did does do is are was were be what how much many when which who whom whose last this next month year quarter week day today ' +
    'owe owes owed use used usage consumed consumption invoice invoices payment payments paid pay contract contracts plan plans s and or our we me my show us has have with by from since between until ' +
    'outstanding balance amount amounts due overdue past late unpaid receivable revenue income earned earnings turnover sales top biggest largest best customer customers total ' +
    'status renew renewal upcoming recent latest most tell give list all any there their its it status rate rates exchange run runs result draft raised sent cancelled canceled'
  ).split(' '),
);
/** A fuzzy match this good (Fuse.js score, 0 exact) is taken; a weaker one is only offered as a candidate. */
const SURE = 0.15;

export type Match<T> = { found: T } | { ambiguous: T[] } | { none: true };

/** Runs of words a fuzzy match looks at: the first 40 words of the question, question words left out. */
const MAX_WORDS = 40;

/**
 * The item the text names. In full, word for word (the longest name wins; two of the same length are
 * ambiguous). Else, when `fuzzy`, by Fuse.js over the text's runs of one to four words that are not only
 * question words: the best match is taken only if it is near-exact and alone; every item within 0.1 of the
 * best is otherwise a candidate. `complete: false` (the names were not all read) never takes a fuzzy match.
 */
export function mentioned<T extends Named>(text: string, items: readonly T[], fuzzy: boolean, extra: (item: T) => string[] = () => [], complete = true): Match<T> {
  const body = normal(text);
  const names = (item: T) => [item.name, ...extra(item)].map(normal).filter((name) => name.trim().length > 0);
  const exact = items.map((item) => ({ item, length: Math.max(0, ...names(item).filter((name) => body.includes(name)).map((name) => name.length)) })).filter((hit) => hit.length > 0);
  if (exact.length > 0) {
    const longest = Math.max(...exact.map((hit) => hit.length));
    const best = exact.filter((hit) => hit.length === longest).map((hit) => hit.item);
    return best.length === 1 ? { found: best[0]! } : { ambiguous: best };
  }
  if (!fuzzy || items.length === 0) return { none: true };
  const words = body.trim().split(' ').filter((word) => word.length > 0).slice(0, MAX_WORDS);
  const runs = new Set<string>();
  for (let size = 1; size <= 4; size += 1) {
    for (let i = 0; i + size <= words.length; i += 1) {
      const run = words.slice(i, i + size);
      // A run starts and ends with a word of the name: question words around it are not part of it.
      if (STOP.has(run[0]!) || STOP.has(run[run.length - 1]!) || run.join('').length < 3) continue;
      runs.add(run.join(' '));
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
  return close.length === 1 && best <= SURE && complete ? { found: close[0]! } : { ambiguous: close };
}
