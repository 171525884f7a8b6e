import { createHash } from 'node:crypto';
import MiniSearch from 'minisearch';
import type { TableInfo } from '../databases/drivers/types';
import type { ColumnValues } from './value-index';
import { abbreviates, isEnglishWord, root, splitCompound, term } from './word-forms';

export { term } from './word-forms';

/**
 * Lexical search over a schema, without a model: one document per table with its name, schema, column
 * names, annotations, example values and database comments as separate fields, ranked by MiniSearch (BM25+ per field, with
 * field boosts and prefix matches). Terms are identifier words (`CustomerID` → customer, id;
 * `order_items` → order, item), lowercased and Porter-stemmed, so plural and singular meet.
 */

/** The annotation fields retrieval uses (a subset of the connections capability's Annotation). */
export interface NoteLike {
  tableName: string;
  columnName: string | null;
  annotation: string;
  dataType?: string | null;
  examples?: string | null;
  /** `auto` annotations were written by automatic annotation; their boilerplate is shortened in prompts. */
  source?: 'user' | 'auto';
  /** When the annotation last changed (schemaKey). */
  updatedAt?: string;
}

const STOP = new Set(
  (
    'a an and are as at be by can could did do does for from get give had has have how i in into is it its ' +
    'list me my of on or our per please show should so than that the their them then there these they this ' +
    'those to us was we were what when where which who whom whose why will with would you your all any each ' +
    'every find tell many much most least top database table tables column columns about over under ' +
    'between during not no only also just more less than same other both either like number total count ' +
    'value values name names give given return returns using use used one two'
  ).split(' '),
);

/** Words of an identifier or a text: camelCase and snake_case split, lowercased (no stemming, no stop words). */
export function rawWords(text: string): string[] {
  const spaced = text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([a-zA-Z])(\d)/g, '$1 $2');
  return spaced
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Index terms of a text: identifier words without stop words or bare numbers, stemmed. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const w of rawWords(text)) {
    if (STOP.has(w) || /^\d+$/.test(w)) continue;
    out.push(term(w));
  }
  return out;
}

/**
 * The terms a question is searched with: its own terms; each pair of neighbouring words joined (`gas
 * stations` → gasstation, to meet a compound identifier); and the roots of its words (`~consum` for
 * consumed, to meet consumption), which only the index's roots field holds.
 */
export function queryTerms(text: string): string[] {
  const ws = rawWords(text).filter((w) => !/^\d+$/.test(w));
  const out = new Set<string>();
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i];
    if (STOP.has(w)) continue;
    out.add(term(w));
    const r = root(w);
    if (r) out.add(`~${r}`);
    const next = ws[i + 1];
    if (next && !STOP.has(next)) out.add(term(w + next));
  }
  return [...out];
}

/** The table name without its schema qualifier (`sales.orders` → `orders`). */
export const bareName = (name: string) => name.slice(name.lastIndexOf('.') + 1);

/** Annotations of one table: matched by full or bare name, case-insensitively. */
export function notesOf(table: TableInfo, notes: NoteLike[]): NoteLike[] {
  const full = table.name.toLowerCase();
  const bare = bareName(table.name).toLowerCase();
  return notes.filter((n) => {
    const t = n.tableName.toLowerCase();
    return t === full || t === bare || (table.schema && t === `${table.schema}.${bare}`.toLowerCase());
  });
}

/**
 * notesOf for many tables at once: the notes grouped by lowercase table name once, then each table's
 * found by its full, bare and schema-qualified names (notesOf scans every note for each table).
 */
export function notesByTable(notes: NoteLike[]): (table: TableInfo) => NoteLike[] {
  const byName = new Map<string, NoteLike[]>();
  for (const n of notes) {
    const k = n.tableName.toLowerCase();
    const list = byName.get(k);
    if (list) list.push(n);
    else byName.set(k, [n]);
  }
  return (t) => {
    const keys = new Set([t.name.toLowerCase(), bareName(t.name).toLowerCase()]);
    if (t.schema) keys.add(`${t.schema}.${bareName(t.name)}`.toLowerCase());
    return [...keys].flatMap((k) => byName.get(k) ?? []);
  };
}

/** The schema part of a table's name (`sales.orders` → `sales`; '' when unqualified). */
const schemaOf = (t: TableInfo) => (t.name.includes('.') ? t.name.slice(0, t.name.lastIndexOf('.')) : '');

interface Doc {
  id: number;
  name: string;
  schema: string;
  columns: string;
  keys: string;
  notes: string;
  values: string;
  /** The database's comments on the table and its columns. */
  comments: string;
  /** Roots (`~consum`) of the words of the table's and columns' names, space separated. */
  roots: string;
}

const BOOST = {
  name: 4,
  columns: 2,
  values: 1.5,
  keys: 0.5,
  notes: 0.6,
  comments: 0.6,
  schema: 0.5,
  roots: 0.6,
};

/** `customer_id`, `CustomerID`, `country_code`: a column that names another table's key. */
const keyLike = (column: string) => {
  const w = rawWords(column);
  return w.length >= 2 && (w.at(-1) === 'id' || w.at(-1) === 'code' || w.at(-1) === 'key');
};

/** A phrase of a question found in the value index. */
export interface ValueHit {
  /** Index into `tables`. */
  table: number;
  column: string;
  value: string;
  /** Words of the matched phrase. */
  words: number;
  /** How many tables hold a value with the same key (1: the phrase points at one table). */
  spread: number;
}

export interface SchemaIndex {
  tables: TableInfo[];
  /** BM25 rank of the tables for a text: index into `tables` → score (only tables that match). */
  rank(text: string): Map<number, number>;
  /** Phrases of the text (1 to VALUE_GRAM_MAX words, in any word form, case-folded) equal to sampled values. */
  valueHits(text: string): ValueHit[];
  /** Tables linked to table i: declared foreign keys both ways, key-like column names, columns named after a table. */
  neighbours(i: number): Set<number>;
}

/** Built indexes kept for reuse, by a digest of the tables and notes they were built from (least recently used out). */
const built = new Map<string, SchemaIndex>();
const BUILT_MAX = 4;

/**
 * The index of a schema, built once per content: a chat answer ranks its question, the search_schema
 * tool and the next questions on the same connection reuse it as long as the tables, the annotations
 * and the values are the same. `key` names that content when the caller knows it from metadata
 * (schemaKey: the cache's time stamp and the annotations' last change), else a SHA-1 digest of all of
 * it is taken (stringifying a 900-table schema with its annotations costs 10–30 ms per question).
 */
export function indexFor(
  tables: TableInfo[],
  notes: NoteLike[],
  values: ColumnValues[] = [],
  key?: string,
): SchemaIndex {
  const id = key
    ? `key:${key}:${tables.length}:${notes.length}:${values.length}`
    : createHash('sha1')
        .update(JSON.stringify(tables))
        .update(JSON.stringify(notes))
        .update(JSON.stringify(values))
        .digest('base64');
  let index = built.get(id);
  if (index && index.tables.length === tables.length) built.delete(id);
  else index = buildIndex(tables, notes, values);
  built.set(id, index);
  while (built.size > BUILT_MAX) built.delete(built.keys().next().value!);
  return index;
}

/**
 * The content key of a connection's schema for indexFor, from metadata only: the cached schema's time
 * stamp (a refresh re-samples values too), and the number and latest change of the annotations (a
 * create, edit or delete changes one of them).
 */
export function schemaKey(
  connectionId: string,
  schemaUpdatedAt: string,
  notes: Array<{ updatedAt?: string }>,
): string {
  let latest = '';
  for (const n of notes) if (n.updatedAt && n.updatedAt > latest) latest = n.updatedAt;
  return `${connectionId}:${schemaUpdatedAt}:${notes.length}:${latest}`;
}

/** Builds the lexical index and the join graph of a schema (about 1 ms per 10 tables). */
export function buildIndex(tables: TableInfo[], notes: NoteLike[], values: ColumnValues[] = []): SchemaIndex {
  const notesFor = notesByTable(notes);
  // The schema's own vocabulary (words of table and column names), to split compound names with.
  const vocabulary = new Set<string>();
  for (const t of tables) {
    for (const w of rawWords(bareName(t.name))) vocabulary.add(w);
    for (const c of t.columns) for (const w of rawWords(c.name)) vocabulary.add(w);
  }
  const known = (part: string) => vocabulary.has(part) || vocabulary.has(`${part}s`);
  const splits = new Map<string, string>();
  /** An identifier with its compound words also split (`gasstations` → `gasstations gas stations`). */
  const spelled = (name: string) => {
    const extra: string[] = [];
    for (const w of rawWords(name)) {
      let s = splits.get(w);
      if (s === undefined) {
        const parts = splitCompound(w, known);
        s = parts ? parts.join(' ') : '';
        splits.set(w, s);
      }
      if (s) extra.push(s);
    }
    return extra.length ? `${name} ${extra.join(' ')}` : name;
  };
  const rootsOf = (text: string) =>
    rawWords(text)
      .map((w) => (STOP.has(w) ? null : root(w)))
      .filter((r): r is string => !!r)
      .map((r) => `~${r}`)
      .join(' ');
  const docs: Doc[] = tables.map((t, id) => {
    const own = notesFor(t);
    const name = spelled(bareName(t.name));
    const columns = t.columns
      .filter((c) => !keyLike(c.name))
      .map((c) => spelled(c.name))
      .join(' ');
    return {
      id,
      name,
      schema: schemaOf(t),
      // Key columns say what a table joins to more than what it is about: their own, lighter field.
      columns,
      keys: t.columns
        .filter((c) => keyLike(c.name))
        .map((c) => c.name)
        .join(' '),
      notes: own.map((n) => n.annotation).join(' \n '),
      values: own.map((n) => n.examples ?? '').join(' \n '),
      comments: [t.comment ?? '', ...t.columns.map((c) => c.comment ?? '')].filter(Boolean).join(' \n '),
      roots: `${rootsOf(name)} ${rootsOf(columns)}`,
    };
  });
  const search = new MiniSearch<Doc>({
    fields: ['name', 'schema', 'columns', 'keys', 'notes', 'values', 'comments', 'roots'],
    tokenize: (text, field) => (field === 'roots' ? text.split(' ').filter(Boolean) : rawWords(text)),
    processTerm: (w, field) => (field === 'roots' ? w : STOP.has(w) || /^\d+$/.test(w) ? null : term(w)),
    searchOptions: {
      boost: BOOST,
      prefix: (t) => t.length >= 5 && !t.startsWith('~'),
      combineWith: 'OR',
      tokenize: (text) => text.split(' ').filter(Boolean),
      processTerm: (t) => t,
    },
  });
  search.addAll(docs);

  // Join graph: declared foreign keys, and columns that name another table's key.
  const links: Array<Set<number>> = tables.map(() => new Set());
  const link = (a: number, b: number) => {
    if (a === b) return;
    links[a].add(b);
    links[b].add(a);
  };
  const byFull = new Map(tables.map((t, i) => [t.name.toLowerCase(), i]));
  const byBare = new Map<string, number[]>();
  // Tables by the stems of their bare name words joined (`order_items` → `order item`).
  const byNameTerms = new Map<string, number[]>();
  // Tables by the name of a single-column primary key that is not a plain `id` (`aid`, `customer_code`).
  const byPk = new Map<string, number[]>();
  const push = (m: Map<string, number[]>, k: string, i: number) => {
    const l = m.get(k);
    if (l) l.push(i);
    else m.set(k, [i]);
  };
  tables.forEach((t, i) => {
    push(byBare, bareName(t.name).toLowerCase(), i);
    push(byNameTerms, rawWords(bareName(t.name)).map(term).join(' '), i);
    if (t.primaryKey.length === 1 && !/^id$/i.test(t.primaryKey[0]))
      push(byPk, t.primaryKey[0].toLowerCase(), i);
  });
  // Among candidates, those of the same schema (else all, when there is one).
  const near = (i: number, cands: number[] | undefined) => {
    if (!cands?.length) return [];
    const same = cands.filter((c) => schemaOf(tables[c]) === schemaOf(tables[i]));
    return same.length ? same : cands.length === 1 ? cands : [];
  };
  tables.forEach((t, i) => {
    for (const fk of t.foreignKeys) {
      const ref = fk.referencedTable.toLowerCase();
      const j = byFull.get(ref) ?? near(i, byBare.get(bareName(ref)))[0];
      if (j !== undefined) link(i, j);
    }
    for (const c of t.columns) {
      if (keyLike(c.name)) {
        const base = rawWords(c.name).slice(0, -1).map(term);
        for (let k = 0; k < base.length; k++)
          for (const j of near(i, byNameTerms.get(base.slice(k).join(' ')))) link(i, j);
      }
      if (!c.primaryKey || t.primaryKey.length > 1) {
        for (const j of near(i, byPk.get(c.name.toLowerCase()))) link(i, j);
        // A column named after a table holds its key (`car_makers.Country` → countries), declared or not.
        if (!keyLike(c.name)) {
          const named = near(i, byNameTerms.get(rawWords(c.name).map(term).join(' ')));
          if (named.length <= 3) for (const j of named) link(i, j);
        }
      }
    }
  });

  // Abbreviated identifier words (`dept`, `qty`, `amt`): short, not English words, found in names.
  const shortWords = new Map<string, string[]>();
  for (const w of vocabulary)
    if (w.length >= 3 && w.length <= 5 && /^[a-z]+$/.test(w) && !isEnglishWord(w)) {
      const l = shortWords.get(w[0]);
      if (l) l.push(w);
      else shortWords.set(w[0], [w]);
    }
  /** Question words a schema holds only abbreviated: their abbreviations' terms (`department` → dept). */
  const abbreviationsOf = (text: string) => {
    const out: string[] = [];
    for (const w of rawWords(text)) {
      if (w.length < 5 || STOP.has(w) || vocabulary.has(w)) continue;
      for (const a of shortWords.get(w[0]) ?? []) if (abbreviates(a, w)) out.push(term(a));
    }
    return out;
  };

  // The value index: the key of a value is its words' terms (`October Meetings` → `octob meet`).
  const byFullName = new Map(tables.map((t, i) => [t.name, i]));
  const valueKeys = new Map<string, Array<{ table: number; column: string; value: string }>>();
  for (const col of values) {
    const ti = byFullName.get(col.t);
    if (ti === undefined) continue;
    for (const v of col.v) {
      const key = valueKey(v);
      if (!key) continue;
      const l = valueKeys.get(key);
      const hit = { table: ti, column: col.c, value: v };
      if (!l) valueKeys.set(key, [hit]);
      else if (l.length < 50 && !l.some((h) => h.table === ti && h.column === col.c)) l.push(hit);
    }
  }

  return {
    tables,
    rank(text: string) {
      const out = new Map<number, number>();
      const q = [...queryTerms(text), ...abbreviationsOf(text)];
      if (!q.length) return out;
      for (const r of search.search(q.join(' '))) out.set(r.id as number, r.score);
      return out;
    },
    valueHits(text: string) {
      const out: ValueHit[] = [];
      if (!valueKeys.size) return out;
      const ws = rawWords(text);
      const ts = ws.map((w) => term(w));
      for (let i = 0; i < ws.length; i++)
        for (let n = Math.min(VALUE_GRAM_MAX, ws.length - i); n >= 1; n--) {
          const first = ws[i];
          const last = ws[i + n - 1];
          if (n === 1 ? !valueWord(first) : STOP.has(first) || STOP.has(last)) continue;
          const hits = valueKeys.get(ts.slice(i, i + n).join(' '));
          if (!hits) continue;
          const spread = new Set(hits.map((h) => h.table)).size;
          for (const h of hits) out.push({ ...h, words: n, spread });
        }
      return out;
    },
    neighbours: (i) => links[i],
  };
}

/** Words of a question phrase matched against values at most. */
export const VALUE_GRAM_MAX = 6;

/** A word that may match a one-word value: not a stop word, a number or shorter than 3 letters. */
const valueWord = (w: string) => w.length >= 3 && !STOP.has(w) && !/^\d+$/.test(w);

/** The key a value is indexed by: its words' terms; '' for a value that is only a number or a stop word. */
export function valueKey(value: string): string {
  const ws = rawWords(value);
  if (!ws.length || ws.length > VALUE_GRAM_MAX) return '';
  if (ws.length === 1 && !valueWord(ws[0])) return '';
  if (ws.every((w) => /^\d+$/.test(w) || STOP.has(w))) return '';
  return ws.map((w) => term(w)).join(' ');
}
