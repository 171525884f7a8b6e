import MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import type { TableInfo } from '../databases/drivers/types';

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

/** A word's index term: Porter stem of the lowercased word. */
export const term = (w: string): string => (w.length > 2 ? stemmer(w) : w);

/** Index terms of a text: identifier words without stop words or bare numbers, stemmed. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const w of rawWords(text)) {
    if (STOP.has(w) || /^\d+$/.test(w)) continue;
    out.push(term(w));
  }
  return out;
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
}

const BOOST = { name: 4, columns: 2, values: 1.5, keys: 0.5, notes: 0.6, comments: 0.6, schema: 0.5 };

/** `customer_id`, `CustomerID`, `country_code`: a column that names another table's key. */
const keyLike = (column: string) => {
  const w = rawWords(column);
  return w.length >= 2 && (w.at(-1) === 'id' || w.at(-1) === 'code' || w.at(-1) === 'key');
};

export interface SchemaIndex {
  tables: TableInfo[];
  /** BM25 rank of the tables for a text: index into `tables` → score (only tables that match). */
  rank(text: string): Map<number, number>;
  /** Tables linked to table i: declared foreign keys both ways, and key-like column names. */
  neighbours(i: number): Set<number>;
}

/** Builds the lexical index and the join graph of a schema (about 1 ms per 10 tables). */
export function buildIndex(tables: TableInfo[], notes: NoteLike[]): SchemaIndex {
  const byTable = new Map<string, NoteLike[]>();
  for (const n of notes) {
    const k = n.tableName.toLowerCase();
    const list = byTable.get(k);
    if (list) list.push(n);
    else byTable.set(k, [n]);
  }
  const notesFor = (t: TableInfo) => {
    const bare = bareName(t.name).toLowerCase();
    const full = t.name.toLowerCase();
    return full === bare
      ? (byTable.get(full) ?? [])
      : [...(byTable.get(full) ?? []), ...(byTable.get(bare) ?? [])];
  };
  const docs: Doc[] = tables.map((t, id) => {
    const own = notesFor(t);
    return {
      id,
      name: bareName(t.name),
      schema: schemaOf(t),
      // Key columns say what a table joins to more than what it is about: their own, lighter field.
      columns: t.columns
        .filter((c) => !keyLike(c.name))
        .map((c) => c.name)
        .join(' '),
      keys: t.columns
        .filter((c) => keyLike(c.name))
        .map((c) => c.name)
        .join(' '),
      notes: own.map((n) => n.annotation).join(' \n '),
      values: own.map((n) => n.examples ?? '').join(' \n '),
      comments: [t.comment ?? '', ...t.columns.map((c) => c.comment ?? '')].filter(Boolean).join(' \n '),
    };
  });
  const search = new MiniSearch<Doc>({
    fields: ['name', 'schema', 'columns', 'keys', 'notes', 'values', 'comments'],
    tokenize: (text) => rawWords(text),
    processTerm: (w) => (STOP.has(w) || /^\d+$/.test(w) ? null : term(w)),
    searchOptions: {
      boost: BOOST,
      prefix: (t) => t.length >= 5,
      combineWith: 'OR',
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
      if (!c.primaryKey || t.primaryKey.length > 1)
        for (const j of near(i, byPk.get(c.name.toLowerCase()))) link(i, j);
    }
  });

  return {
    tables,
    rank(text: string) {
      const out = new Map<number, number>();
      if (!terms(text).length) return out;
      for (const r of search.search(text)) out.set(r.id as number, r.score);
      return out;
    },
    neighbours: (i) => links[i],
  };
}
