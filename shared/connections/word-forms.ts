import { lancasterStemmer } from 'lancaster-stemmer';
import { stemmer } from 'stemmer';
// wink-lexicon's English lexicon (about 13,000 common words), to tell an abbreviation from a word.
import englishLexicon from 'wink-lexicon/src/lexicon.js';
// WordNet's lists of irregular forms (bought → buy, children → child), as wink-lexicon ships them.
import nounExceptions from 'wink-lexicon/src/wn-noun-exceptions.js';
import verbExceptions from 'wink-lexicon/src/wn-verb-exceptions.js';

/**
 * Word forms for schema linking, without a model: a question and a schema name the same thing in other
 * forms. Three keys of a lowercase word, each from a maintained package, none from a list of our own:
 *  - baseForm: WordNet's irregular forms (bought → buy, people → person, ran → run);
 *  - term: the Porter stem of the base form (stations, station → station; consumed → consum);
 *  - root: the Lancaster stem of the base form, a more aggressive, derivational key (consumption,
 *    consumed → consum; departure, departed → depart; competition, competitor → competit). Too coarse to
 *    rank by alone (agent and age meet), so the index weighs it lightly.
 * Compound identifiers are split and joined by splitCompound and the ranking (schema-index.ts).
 */

const nouns = nounExceptions as Record<string, string>;

const lexicon = englishLexicon as Record<string, unknown>;
/** Whether a lowercase word is in wink-lexicon's English lexicon. */
export function isEnglishWord(w: string): boolean {
  return Object.hasOwn(lexicon, w) || Object.hasOwn(lexicon, baseForm(w));
}

/**
 * Whether `short` abbreviates `word` (`dept` department, `amt` amount, `qty` quantity, `cust` customer):
 * same first letter, its letters in order in the word, and the same second letter, or, for a
 * three-letter abbreviation without vowels, the same last letter (so `cnt` is not `country`).
 */
export function abbreviates(short: string, word: string): boolean {
  if (short.length >= word.length || short[0] !== word[0]) return false;
  let j = 1;
  for (let i = 1; i < word.length && j < short.length; i++) if (word[i] === short[j]) j++;
  if (j < short.length) return false;
  if (short[1] === word[1]) return true;
  return short.length === 3 && !/[aeiou]/.test(short) && short.at(-1) === word.at(-1);
}
const verbs = verbExceptions as Record<string, string>;
const own = (m: Record<string, string>, w: string) => (Object.hasOwn(m, w) ? m[w] : undefined);

/** The dictionary form of an irregular word (WordNet's exception lists), else the word itself. */
export const baseForm = (w: string): string => own(verbs, w) ?? own(nouns, w) ?? w;

const termCache = new Map<string, string>();
const rootCache = new Map<string, string | null>();
const CACHE_MAX = 50_000;
const remember = <T>(m: Map<string, T>, k: string, v: T) => {
  if (m.size >= CACHE_MAX) m.clear();
  m.set(k, v);
  return v;
};

/** A word's index term: the Porter stem of its base form (words of 1 or 2 letters stay as they are). */
export function term(w: string): string {
  if (w.length <= 2) return w;
  const hit = termCache.get(w);
  return hit ?? remember(termCache, w, stemmer(baseForm(w)));
}

/** Root of a word: the Lancaster stem of its base form; null for short words and short roots (too vague). */
export function root(w: string): string | null {
  if (w.length < 5 || /\d/.test(w)) return null;
  const hit = rootCache.get(w);
  if (hit !== undefined) return hit;
  const r = lancasterStemmer(baseForm(w));
  return remember(rootCache, w, r.length >= 4 ? r : null);
}

/**
 * Splits a compound word into two known words (`gasstations` → gas stations, `yearmonth` → year month),
 * or null. `known` says whether a part is a word (the schema's own vocabulary); both parts have at least
 * three letters, and the most even split wins.
 */
export function splitCompound(w: string, known: (part: string) => boolean): [string, string] | null {
  if (w.length < 6 || /\d/.test(w)) return null;
  let best: [string, string] | null = null;
  for (let i = 3; i <= w.length - 3; i++) {
    const a = w.slice(0, i);
    const b = w.slice(i);
    if (!known(a) || !known(b)) continue;
    if (!best || Math.min(a.length, b.length) > Math.min(best[0].length, best[1].length)) best = [a, b];
  }
  return best;
}
