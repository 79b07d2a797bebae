/**
 * Names in a question: the organisation's customers, meters, contracts and entities, matched where the
 * text names them in full, or fuzzily (Fuse.js). The built-in engine and the chatbot's queries both read them.
 */
import Fuse from 'fuse.js';
import { isCurrency } from '../../domain/currencies';

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
/** The words of the names, as the question's words are compared with them. */
export const wordsOf = (names: readonly string[]): Set<string> => new Set(names.flatMap((name) => normal(name).trim().split(' ')).filter((word) => word.length > 0));

/** The words questions are made of: never read as (part of) a name. */
const STOP = new Set(
  (
    'the a an of for to in on at did does do is are was were be what how much many when which who whom whose last this next month year quarter week day today ' +
    'owe owes owed use used usage consumed consumption invoice invoices payment payments paid pay contract contracts plan plans s and or our we me my show us has have with by from since between until ' +
    'outstanding balance amount amounts due overdue past late unpaid receivable revenue income earned earnings turnover sales top biggest largest best customer customers total ' +
    'status renew renewal upcoming recent latest most tell give list all any there their its it status rate rates exchange run runs result draft raised sent cancelled canceled ytd'
  ).split(' '),
);
/** A fuzzy match this good (Fuse.js score, 0 exact) is taken; a weaker one is only offered as a candidate. */
const SURE = 0.15;

/** `ambiguous: []`: the text names an item of this kind by an id the organisation does not have. */
export type Match<T> = { found: T } | { ambiguous: T[] } | { none: true };

/** An id as the API writes them (`cus_01m9…`): its kind's prefix, an underscore, then letters and digits. */
const ID = /\b([a-z]{2,5})_[0-9a-z]{6,}\b/gi;
const prefixOf = (id: string) => id.slice(0, id.indexOf('_')).toLowerCase();

/** Runs of words a fuzzy match looks at: the first 40 words of the question, question words left out. */
const MAX_WORDS = 40;

/**
 * The item the text names. In full, word for word (the longest name wins; two of the same length are
 * ambiguous). Else, when `fuzzy`, by Fuse.js over the text's runs of one to four words that are not only
 * question words: the best match is taken only if it is near-exact and alone, and the question's words
 * around it are all of that name; every item within 0.1 of the best is otherwise a candidate. `complete:
 * false` (the names were not all read) never takes a fuzzy match.
 */
export function mentioned<T extends Named>(
  text: string,
  items: readonly T[],
  fuzzy: boolean,
  extra: (item: T) => string[] = () => [],
  complete = true,
  otherWords: ReadonlySet<string> = new Set(),
): Match<T> {
  // An id names its item, or, of this kind, none the organisation has; it is never read as words
  // ("cus_01m9…" is not "cus" and "01m9…", which "Custa" would fit).
  const ids = (text.match(ID) ?? []).map((id) => id.toLowerCase());
  if (ids.length > 0) {
    const byId = items.filter((item) => ids.includes(item.id.toLowerCase()));
    if (byId.length > 0) return byId.length === 1 ? { found: byId[0]! } : { ambiguous: byId };
    const kinds = new Set(items.map((item) => prefixOf(item.id)));
    if (ids.some((id) => kinds.has(prefixOf(id)))) return { ambiguous: [] };
    text = text.replace(ID, ' ');
  }
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
  const runs = new Map<string, { start: number; size: number }>();
  for (let size = 1; size <= 4; size += 1) {
    for (let i = 0; i + size <= words.length; i += 1) {
      const run = words.slice(i, i + size);
      // A run starts and ends with a word of the name: question words around it are not part of it.
      if (STOP.has(run[0]!) || STOP.has(run[run.length - 1]!) || run.join('').length < 3) continue;
      if (!runs.has(run.join(' '))) runs.set(run.join(' '), { start: i, size });
    }
  }
  const fuse = new Fuse(
    items.map((item) => ({ item, names: names(item).map((name) => name.trim()) })),
    { keys: ['names'], includeScore: true, threshold: 0.3, ignoreLocation: true },
  );
  const scores = new Map<T, { score: number; run: { start: number; size: number } }>();
  for (const [text, run] of runs) {
    for (const hit of fuse.search(text)) {
      const score = hit.score ?? 1;
      if (score < (scores.get(hit.item.item)?.score ?? 1)) scores.set(hit.item.item, { score, run });
    }
  }
  if (scores.size === 0) return { none: true };
  const best = Math.min(...[...scores.values()].map((hit) => hit.score));
  const close = [...scores].filter(([, hit]) => hit.score <= best + 0.1).map(([item]) => item);
  if (close.length !== 1 || best > SURE || !complete) return { ambiguous: close };
  // The name the question writes is the match and the words around it that can be a name's: not across
  // punctuation, a question word, a number, a quarter or a currency code, nor a word written in lower case
  // that is not of this name ("Acme credit balance"); a capital letter alone is ("Globex A"). Each must be a
  // word of the item's name, or its start, give or take a typo, unless it is a word of another kind of name
  // (`otherWords`: a meter's, a contract's). "Acme" names "Acme Corporation"; "Globex Zeta Industries" or
  // "Globex A" do not name "Globex B", although "Globex" alone would.
  const { run } = scores.get(close[0]!)!;
  const nameWords = names(close[0]!).flatMap((name) => name.trim().split(' '));
  const ofName = (word: string) => nameWords.some((nameWord) => nameWord.startsWith(word) || withinTypos(word, nameWord));
  const tokens = [...text.matchAll(/[\p{L}\p{N}]+/gu)].slice(0, MAX_WORDS);
  const aligned = tokens.length === words.length && tokens.every((token, i) => token[0].toLowerCase() === words[i]);
  const written = (i: number) => (aligned ? tokens[i]![0] : words[i]!);
  const punctuationBefore = (i: number) => aligned && i > 0 && /[,.;:!?()]/.test(text.slice(tokens[i - 1]!.index! + tokens[i - 1]![0].length, tokens[i]!.index));
  const canName = (i: number) => {
    const word = words[i]!;
    const original = written(i);
    const capitalLetter = word.length === 1 && original !== word;
    if (STOP.has(word) && !capitalLetter) return false;
    if (/^\p{N}+$/u.test(word) || /^q[1-4]$/.test(word) || (/^[A-Z]{3}$/.test(original) && isCurrency(original))) return false;
    return !aligned || original[0] !== original[0]!.toLowerCase() || ofName(word);
  };
  let start = run.start;
  let end = run.start + run.size;
  while (start > 0 && !punctuationBefore(start) && canName(start - 1)) start -= 1;
  while (end < words.length && !punctuationBefore(end) && canName(end)) end += 1;
  const fits = words.slice(start, end).every((word) => otherWords.has(word) || ofName(word));
  return fits ? { found: close[0]! } : { ambiguous: close };
}

/** Whether `word` is `target` with a typo or two: one edit from 5 letters, two from 9. */
function withinTypos(word: string, target: string): boolean {
  const allowed = word.length >= 9 ? 2 : word.length >= 5 ? 1 : 0;
  if (allowed === 0 || Math.abs(word.length - target.length) > allowed) return false;
  let previous = Array.from({ length: target.length + 1 }, (_, j) => j);
  for (let i = 1; i <= word.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= target.length; j += 1) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (word[i - 1] === target[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[target.length]! <= allowed;
}
