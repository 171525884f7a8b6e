import {
  bareName,
  indexFor,
  type NoteLike,
  notesByTable,
  notesOf,
  queryTerms,
  rawWords,
  type SchemaIndex,
  term,
  terms,
  type ValueHit,
} from '../connections/schema-index';
import type { ColumnValues } from '../connections/value-index';
import type { TableInfo } from '../databases/drivers/types';

export { bareName, type NoteLike, notesOf } from '../connections/schema-index';

/**
 * The schema part of the first prompt is budgeted in tokens (estimated from bytes, see estimateTokens):
 * the best-ranked tables are described with their columns until the budget is spent.
 */
export const SCHEMA_TOKEN_BUDGET = 10_000;
/** Bytes per token assumed by estimateTokens (schema text is identifier-heavy: about 3.5 on common tokenizers). */
const BYTES_PER_TOKEN = 3.5;
/** Characters of detailed table definitions in the first prompt at most (the token budget in characters). */
export const SCHEMA_BUDGET = Math.floor(SCHEMA_TOKEN_BUDGET * BYTES_PER_TOKEN);
/** Characters of the name-only list of the other tables. */
export const CATALOG_BUDGET = 3_000;
/** Tables described in the first prompt at most (the character budget ends it first on most schemas). */
export const MAX_DETAILED_TABLES = 400;
/**
 * A schema of at most this many tables that fits the budget is described whole, without ranking; a
 * larger one is ranked (and the optional embedding index consulted) even when many of its tables fit.
 */
export const WHOLE_SCHEMA_TABLES = 60;
/** Tables described in full (with annotations and examples); the next ones get one line each. */
export const FULL_TABLES = 8;
/** Columns shown per table before "+N more". */
export const MAX_COLUMNS_SHOWN = 60;
const NOTE_CHARS = 240;
/** Characters of a database comment in a full table description (comments are stored clipped to 300). */
const COMMENT_PROMPT_CHARS = 300;
/** Characters of a table's comment in a one-line description. */
const BRIEF_COMMENT_CHARS = 80;

/** A rough token count of a text (bytes / 3.5), for budgets; never sent anywhere. */
export const estimateTokens = (text: string) => Math.ceil(Buffer.byteLength(text) / BYTES_PER_TOKEN);

const STOP = new Set(
  (
    'a an and are as at be by can could did do does for from get give had has have how i in into is it its ' +
    'list me my of on or our per please show should so than that the their them then there these they this ' +
    'those to us was we were what when where which who whom whose why will with would you your all any each ' +
    'every find tell many much most least top database table tables column columns about over under ' +
    'between during'
  ).split(' '),
);

/** Lowercase word stems of a text: splits camelCase and snake_case, drops stop words, folds plurals. */
export function words(text: string): string[] {
  const out: string[] = [];
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2');
  for (const raw of spaced.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!raw || STOP.has(raw)) continue;
    if (/^\d+$/.test(raw)) continue;
    out.push(stem(raw));
  }
  return out;
}

export function stem(w: string): string {
  if (w.length > 4 && w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.length > 4 && /(ses|xes|ches|shes)$/.test(w)) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us') && !w.endsWith('is'))
    return w.slice(0, -1);
  return w;
}

/** Tables ranked by relevance to the text (only those that match at all), best first. */
export function rankTables(
  tables: TableInfo[],
  notes: NoteLike[],
  text: string,
  index: SchemaIndex = indexFor(tables, notes),
): Array<{ table: TableInfo; score: number }> {
  const { scores } = lexicalScores(index, text);
  return [...scores.entries()]
    .map(([i, score]) => ({ table: tables[i], score }))
    .sort((a, b) => b.score - a.score || a.table.name.localeCompare(b.table.name));
}

/** Weight of a value match against the best BM25 score: a phrase of 2+ words, one word. */
const VALUE_PHRASE_WEIGHT = 0.9;
const VALUE_WORD_WEIGHT = 0.35;
/** A one-word value held by more tables than this says nothing about which table is meant. */
const VALUE_WORD_SPREAD_MAX = 6;
/** The score a value match is weighed against when no name matched at all. */
const VALUE_FLOOR_SCORE = 10;

/**
 * BM25 score of each matching table, plus a bonus when the question names the table outright
 * (all the words of its name, in any form: `order items` for `order_items`), plus a bonus for the
 * table of a value the question names (value index): most for a phrase held by one table.
 */
function lexicalScores(index: SchemaIndex, text: string): { scores: Map<number, number>; hits: ValueHit[] } {
  const scores = index.rank(text);
  const hits = index.valueHits(text).filter((h) => h.words > 1 || h.spread <= VALUE_WORD_SPREAD_MAX);
  if (!scores.size && !hits.length) return { scores, hits };
  const top = Math.max(0, ...scores.values());
  const qTerms = new Set(queryTerms(text));
  for (const [i, s] of scores) {
    const nameTerms = rawWords(bareName(index.tables[i].name)).map(term);
    if (nameTerms.length && nameTerms.every((w) => qTerms.has(w))) scores.set(i, s + top * 0.5);
  }
  const best = new Map<number, number>();
  for (const h of hits) {
    const w = (h.words > 1 ? VALUE_PHRASE_WEIGHT : VALUE_WORD_WEIGHT) / Math.sqrt(h.spread);
    best.set(h.table, Math.max(best.get(h.table) ?? 0, w));
  }
  const base = Math.max(top, VALUE_FLOOR_SCORE);
  for (const [i, w] of best) scores.set(i, (scores.get(i) ?? 0) + base * w);
  return { scores, hits };
}

/** The matched values of each table (by name), for the prompt: `column → value`, first match per column. */
function hitsByTable(index: SchemaIndex, hits: ValueHit[]): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const h of [...hits].sort((a, b) => b.words - a.words || a.spread - b.spread)) {
    const name = index.tables[h.table].name;
    let m = out.get(name);
    if (!m) {
      m = new Map();
      out.set(name, m);
    }
    if (!m.has(h.column) && m.size < 3) m.set(h.column, h.value);
  }
  return out;
}

/** The values a text names, by table name (column → value), as the prompt shows them. */
export const valuesNamed = (index: SchemaIndex, text: string) =>
  hitsByTable(index, lexicalScores(index, text).hits);

/** A sampled value as the prompt shows it: a JSON string (values are untrusted data, never instructions). */
const quotedValue = (v: string) => JSON.stringify(clip(v, 64));

/** Tables a shortest join path between two linked tables passes through (3 joins at most). */
const PATH_MAX_JOINS = 3;
/** Linked tables whose join paths are completed, at most. */
const PATH_ANCHORS = 5;
/** Nodes one path search visits at most (hub tables link to hundreds). */
const PATH_VISIT_MAX = 4_000;

/**
 * Join-path completion: for the best-ranked tables (score within 25% of the best) and the tables of
 * the values named, the tables on a shortest path of links between each two (declared foreign keys,
 * key-like column names, shared key columns; see schema-index.ts) are ranked just below the lower of
 * the two, so that a bridge table (`expense` → `budget` → `event`) is described with them.
 */
function completeJoinPaths(index: SchemaIndex, final: Map<number, number>, valueTables: number[]): void {
  if (final.size < 2) return;
  const ranked = [...final.entries()].sort((a, b) => b[1] - a[1]);
  const top = ranked[0][1];
  const anchors: number[] = [];
  for (const [i, s] of ranked) {
    if (anchors.length >= PATH_ANCHORS - Math.min(2, valueTables.length) || s < top * 0.25) break;
    anchors.push(i);
  }
  for (const i of valueTables) if (!anchors.includes(i) && anchors.length < PATH_ANCHORS) anchors.push(i);
  if (anchors.length < 2) return;
  const raise = new Map<number, number>();
  for (let a = 0; a < anchors.length; a++) {
    const from = anchors[a];
    // Breadth-first from `from`, up to PATH_MAX_JOINS links.
    const parent = new Map<number, number>([[from, -1]]);
    let frontier = [from];
    for (let depth = 0; depth < PATH_MAX_JOINS && frontier.length && parent.size < PATH_VISIT_MAX; depth++) {
      const next: number[] = [];
      for (const u of frontier)
        for (const v of index.neighbours(u))
          if (!parent.has(v)) {
            parent.set(v, u);
            next.push(v);
          }
      frontier = next;
    }
    for (let b = a + 1; b < anchors.length; b++) {
      const to = anchors[b];
      if (!parent.has(to)) continue;
      const floor = Math.min(final.get(from) ?? 0, final.get(to) ?? 0) * 0.95;
      for (let u = parent.get(to)!; u !== from && u !== -1; u = parent.get(u)!)
        raise.set(u, Math.max(raise.get(u) ?? 0, floor));
    }
  }
  for (const [i, s] of raise) if ((final.get(i) ?? 0) < s) final.set(i, s);
}

/** Auto annotations repeat the column's type, key and reference: the prompt keeps only what they add. */
function noteText(n: NoteLike): string {
  if (n.source !== 'auto' || n.columnName === null) return n.annotation;
  return n.annotation
    .replace(/^[^.]*?, (nullable|not null)\.\s*/, '')
    .replace(/(Part of the primary key|Primary key)\.\s*/, '')
    .replace(/References [^\s]+\.\s*/, '')
    .trim();
}

/** A table's definition as compact text: columns with types, keys, references and annotations. */
export function renderTable(
  table: TableInfo,
  notes: NoteLike[],
  opts: { focus?: string[]; maxColumns?: number; values?: Map<string, string> } = {},
): string {
  const maxColumns = opts.maxColumns ?? MAX_COLUMNS_SHOWN;
  const own = notesOf(table, notes);
  const tableNote = own.find((n) => n.columnName === null);
  const colNote = new Map(
    own.filter((n) => n.columnName !== null).map((n) => [n.columnName!.toLowerCase(), n]),
  );
  const fkOf = new Map<string, string>();
  for (const fk of table.foreignKeys)
    fk.columns.forEach((c, i) => {
      fkOf.set(c, `${fk.referencedTable}.${fk.referencedColumns[i] ?? fk.referencedColumns[0] ?? '?'}`);
    });
  const kind = table.kind === 'table' ? 'TABLE' : table.kind === 'view' ? 'VIEW' : 'COLLECTION';
  const rows = table.rowEstimate === null ? '' : ` (~${table.rowEstimate.toLocaleString('en-US')} rows)`;
  const head = `${kind} ${table.name}${rows}${quotedComment(table.comment)}${tableNote ? ` -- ${clip(tableNote.annotation, NOTE_CHARS)}` : ''}`;
  const focus = new Set((opts.focus ?? []).map((w) => w.toLowerCase()));
  let cols = table.columns;
  if (cols.length > maxColumns) {
    // Keep key, referencing, annotated and question-matching columns first, then the rest in order.
    const important = (c: (typeof cols)[number]) =>
      c.primaryKey ||
      fkOf.has(c.name) ||
      colNote.has(c.name.toLowerCase()) ||
      opts.values?.has(c.name) ||
      words(c.name).some((w) => focus.has(w));
    cols = [...cols.filter(important), ...cols.filter((c) => !important(c))].slice(0, maxColumns);
  }
  const lines = [head];
  for (const c of cols) {
    const bits = [`  ${c.name} ${c.type}`];
    if (c.primaryKey) bits.push('PK');
    if (!c.nullable && !c.primaryKey) bits.push('NOT NULL');
    const ref = fkOf.get(c.name);
    if (ref) bits.push(`→ ${ref}`);
    if (c.comment) bits.push(quotedComment(c.comment).trimStart());
    const matched = opts.values?.get(c.name);
    if (matched !== undefined) bits.push(`[value: ${quotedValue(matched)}]`);
    const n = colNote.get(c.name.toLowerCase());
    if (n) {
      const extra = [noteText(n), n.examples ? `examples: ${n.examples}` : ''].filter(Boolean).join('; ');
      bits.push(`-- ${clip(extra, NOTE_CHARS)}`);
    }
    lines.push(bits.join(' '));
  }
  if (table.columns.length > cols.length)
    lines.push(`  … +${table.columns.length - cols.length} more columns (describe_tables shows all)`);
  return lines.join('\n');
}

/**
 * A table in one line: name, row estimate and every column with its type and keys. Annotations are left
 * out, except the example values of a column when one of them shares a word with the question (so that a
 * question naming `LAM` sees the column that holds it).
 */
export function renderTableBrief(
  table: TableInfo,
  opts: {
    maxColumns?: number;
    notes?: NoteLike[];
    questionTerms?: Set<string>;
    /** Values of the table the question names (value index): column → value. */
    values?: Map<string, string>;
  } = {},
): string {
  const maxColumns = opts.maxColumns ?? MAX_COLUMNS_SHOWN;
  const fkOf = new Map<string, string>();
  for (const fk of table.foreignKeys)
    fk.columns.forEach((c, i) => {
      fkOf.set(c, `${fk.referencedTable}.${fk.referencedColumns[i] ?? fk.referencedColumns[0] ?? '?'}`);
    });
  const q = opts.questionTerms;
  const matched = new Map<string, string>();
  if (q?.size && opts.notes)
    for (const n of notesOf(table, opts.notes))
      if (n.columnName !== null && n.examples && rawWords(n.examples).some((w) => q.has(term(w))))
        matched.set(n.columnName.toLowerCase(), n.examples);
  const kind = table.kind === 'table' ? 'TABLE' : table.kind === 'view' ? 'VIEW' : 'COLLECTION';
  const rows = table.rowEstimate === null ? '' : ` (~${table.rowEstimate.toLocaleString('en-US')} rows)`;
  const cols = table.columns.slice(0, maxColumns).map((c) => {
    const ref = fkOf.get(c.name);
    const values = matched.get(c.name.toLowerCase());
    const named = opts.values?.get(c.name);
    return `${c.name} ${c.type}${c.primaryKey ? ' PK' : ''}${ref ? ` → ${ref}` : ''}${named !== undefined ? ` [value: ${quotedValue(named)}]` : values ? ` [values: ${clip(values, 120)}]` : ''}`;
  });
  const more = table.columns.length > cols.length ? `, … +${table.columns.length - cols.length} more` : '';
  return `${kind} ${table.name}${rows}${quotedComment(table.comment, BRIEF_COMMENT_CHARS)}: ${cols.join(', ')}${more}`;
}

export const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

/**
 * A database comment as the prompt shows it: ` comment: "…"`, a JSON string, so that quotes, backslashes
 * and anything the cleaning left cannot end the quotation or start a line of its own (comments are
 * untrusted; the system prompt says they are data).
 */
export const quotedComment = (comment: string | undefined, max = COMMENT_PROMPT_CHARS) =>
  comment ? ` comment: ${JSON.stringify(clip(comment, max))}` : '';

export interface SchemaContext {
  /** Detailed definitions of the chosen tables. */
  text: string;
  /** Names of the tables given in detail. */
  detailed: string[];
  /** How many tables exist in all. */
  total: number;
  /** True when some tables are not given in detail (the model must use the lookup tools for them). */
  partial: boolean;
}

export interface SchemaContextOptions {
  /** SQL of earlier answers in the conversation: the tables they used are kept in the prompt. */
  earlierSql?: string[];
  /** Characters the schema text may take at most (the room left in the first request); default SCHEMA_BUDGET + CATALOG_BUDGET. */
  maxChars?: number;
  /**
   * Tables nearest to the question by embedding (indexes into `tables`, best first; embedding-index.ts).
   * The best of them that lexical ranking left out are added (SEMANTIC_EXTRA_TABLES, one line each, in
   * room taken from the other-tables list). Absent: lexical ranking alone.
   */
  semantic?: number[];
  /** The connection's usable sampled values (value-index.ts usableValues); absent or [] when none. */
  values?: ColumnValues[];
  /** The schema's content key (schemaKey), so the index is found without digesting the schema. */
  indexKey?: string;
}

/** How many of the embedding ranking's best tables may be added to what lexical ranking chose. */
export const SEMANTIC_EXTRA_TABLES = 3;

/**
 * Room for those tables (one line each), taken from the list of other table names, never from the
 * tables lexical ranking chose: with embeddings on, every table described without them is still
 * described.
 */
export const SEMANTIC_EXTRA_CHARS = 1_200;

/** True when the whole schema fits the budget (it is then described whole and no ranking is needed). */
export function schemaFitsWhole(tables: TableInfo[], notes: NoteLike[], question: string, maxChars?: number) {
  const focus = words(question);
  const max = Math.max(1_000, maxChars ?? SCHEMA_BUDGET + CATALOG_BUDGET);
  const budget = max - Math.min(CATALOG_BUDGET, Math.floor(max / 6));
  if (tables.length > WHOLE_SCHEMA_TABLES) return false;
  let used = 0;
  const notesFor = notesByTable(notes);
  for (const t of tables) {
    let r = renderTable(t, notesFor(t), { focus });
    if (r.length > budget / 4) r = renderTable(t, notesFor(t), { focus, maxColumns: 25 });
    used += r.length + 1;
    if (used > budget) return false;
  }
  return true;
}

/** Table names a statement reads (after FROM and JOIN), from its text; best effort, for ranking only. */
export function tablesInSql(sql: string): string[] {
  const out: string[] = [];
  const ident = '(?:"[^"]+"|`[^`]+`|\\[[^\\]]+\\]|[\\p{L}_][\\p{L}\\p{N}_$]*)';
  const re = new RegExp(`\\b(?:from|join)\\s+(${ident}(?:\\s*\\.\\s*${ident}){0,2})`, 'giu');
  for (const m of sql.matchAll(re)) out.push(m[1].replace(/\s+/g, '').replace(/["`[\]]/g, ''));
  return [...new Set(out)];
}

/**
 * Chooses the tables the prompt describes. A schema that fits the budget is given whole. A large one
 * (hundreds of tables) is narrowed:
 *  1. lexical rank (BM25 over table names, column names, annotations, example values and database
 *     comments; see schema-index.ts) of the question, plus the earlier questions of the conversation at
 *     half weight;
 *  2. tables the conversation's earlier SQL used, kept first;
 *  3. join-path expansion: tables linked to the best matches (declared foreign keys both ways, and
 *     key-like column names: `customer_id` → customers, a shared key column such as `aid`) gain a share of
 *     their score, most for tables that link two good matches (bridge tables);
 *  4. the budget (SCHEMA_TOKEN_BUDGET, or less when the rest of the request leaves less room) is spent
 *     in that order: the first FULL_TABLES tables in full (with annotations and examples), the next ones
 *     in one line each with their columns and types. The rest are listed by name while that list fits;
 *     the search_schema / describe_tables tools reach everything else;
 *  5. with an embedding ranking (opts.semantic), its best tables not described yet are added in one
 *     line each, in room taken from the list of names: embeddings only add to what lexical ranking chose.
 */
export function buildSchemaContext(
  tables: TableInfo[],
  notes: NoteLike[],
  question: string,
  earlierQuestions: string[] = [],
  opts: SchemaContextOptions = {},
): SchemaContext {
  const focus = words(question);
  const maxChars = Math.max(1_000, opts.maxChars ?? SCHEMA_BUDGET + CATALOG_BUDGET);
  const catalogBudget = Math.min(CATALOG_BUDGET, Math.floor(maxChars / 6));
  const budget = maxChars - catalogBudget;
  const full = new Map<string, string>();
  const notesFor = notesByTable(notes);
  let named = new Map<string, Map<string, string>>();
  const render = (t: TableInfo) => {
    let r = full.get(t.name);
    if (r === undefined) {
      const own = notesFor(t);
      const values = named.get(t.name);
      r = renderTable(t, own, { focus, values });
      if (r.length > budget / 4) r = renderTable(t, own, { focus, maxColumns: 25, values });
      full.set(t.name, r);
    }
    return r;
  };
  if (!tables.length)
    return {
      text: '(The schema has no tables, or it has not been read yet.)',
      detailed: [],
      total: 0,
      partial: false,
    };

  if (tables.length <= WHOLE_SCHEMA_TABLES && tables.reduce((n, t) => n + render(t).length + 1, 0) <= budget)
    return {
      text: tables.map(render).join('\n'),
      detailed: tables.map((t) => t.name),
      total: tables.length,
      partial: false,
    };

  const index = indexFor(tables, notes, opts.values ?? [], opts.indexKey);
  const questionTerms = new Set(terms(question));
  const { scores: score, hits } = lexicalScores(index, question);
  named = hitsByTable(index, hits);
  for (const q of earlierQuestions)
    for (const [i, s] of lexicalScores(index, q).scores) score.set(i, (score.get(i) ?? 0) + s / 2);
  const semantic = (opts.semantic ?? []).filter((i) => Number.isInteger(i) && i >= 0 && i < tables.length);
  const top = Math.max(0, ...score.values());

  // Earlier SQL's tables first.
  const pinned: number[] = [];
  const position = new Map(tables.map((t, i) => [t, i]));
  for (const sql of opts.earlierSql ?? [])
    for (const t of findTables(tables, tablesInSql(sql)).found) {
      const i = position.get(t)!;
      if (!pinned.includes(i)) pinned.push(i);
    }

  // Join-path expansion from the best matches.
  const seeds = [...score.entries()]
    .filter(([, s]) => s >= top * 0.2)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10);
  for (const i of pinned) if (!seeds.some(([j]) => j === i)) seeds.push([i, top]);
  const bonus = new Map<number, number>();
  for (const [i, s] of seeds)
    for (const j of index.neighbours(i)) bonus.set(j, (bonus.get(j) ?? 0) + s * 0.35);
  const final = new Map(score);
  for (const [j, b] of bonus) final.set(j, (final.get(j) ?? 0) + b);
  const valueTables = [
    ...new Set(
      [...hits]
        .sort((a, b) => b.words - a.words || a.spread - b.spread)
        .flatMap((h) => (h.spread <= 2 ? [h.table] : [])),
    ),
  ].slice(0, 3);
  completeJoinPaths(index, final, valueTables);

  const order: number[] = [...pinned];
  const seen = new Set(pinned);
  for (const [i] of [...final.entries()].sort(
    (a, b) => b[1] - a[1] || tables[a[0]].name.localeCompare(tables[b[0]].name),
  ))
    if (!seen.has(i)) {
      seen.add(i);
      order.push(i);
    }
  // Room left after every matched table: their linked tables next (a table's neighbours in rank order),
  // so that a table one join away from a match is described rather than the room left empty.
  const matched = order.length;
  for (let k = 0; k < matched; k++)
    for (const j of index.neighbours(order[k]))
      if (!seen.has(j)) {
        seen.add(j);
        order.push(j);
      }
  // Nothing matched: start from the largest tables.
  if (!order.length)
    tables
      .map((_, i) => i)
      .sort(
        (a, b) =>
          (tables[b].rowEstimate ?? -1) - (tables[a].rowEstimate ?? -1) ||
          tables[a].name.localeCompare(tables[b].name),
      )
      .forEach((i) => {
        order.push(i);
      });

  const detailed: TableInfo[] = [];
  const pieces: string[] = [];
  let used = 0;
  for (const i of order) {
    if (detailed.length >= MAX_DETAILED_TABLES) break;
    const t = tables[i];
    const brief = () =>
      renderTableBrief(t, { maxColumns: 40, notes: notesFor(t), questionTerms, values: named.get(t.name) });
    let r = detailed.length < FULL_TABLES ? render(t) : brief();
    if (used + r.length + 1 > budget && detailed.length < FULL_TABLES) r = brief();
    if (used + r.length + 1 > budget) {
      if (budget - used < 200) break;
      continue;
    }
    detailed.push(t);
    pieces.push(r);
    used += r.length + 1;
  }
  // Embedding matches that lexical ranking left out, in room taken from the list of other names.
  const extraRoom = semantic.length ? Math.min(SEMANTIC_EXTRA_CHARS, Math.floor(catalogBudget / 2)) : 0;
  let extraUsed = 0;
  let added = 0;
  for (const i of semantic) {
    if (added >= SEMANTIC_EXTRA_TABLES) break;
    const t = tables[i];
    if (detailed.includes(t)) continue;
    const r = renderTableBrief(t, { maxColumns: 40, notes: notesFor(t), questionTerms });
    if (extraUsed + r.length + 1 > extraRoom) continue;
    detailed.push(t);
    pieces.push(r);
    extraUsed += r.length + 1;
    added++;
  }
  const catalogRoom = catalogBudget - extraUsed;
  const shown = new Set(detailed.map((t) => t.name));
  // The next best-ranked tables first, then the rest by name.
  const ranked = order.map((i) => tables[i].name).filter((n) => !shown.has(n));
  const inRanked = new Set(ranked);
  const others = [
    ...ranked,
    ...tables
      .map((t) => t.name)
      .filter((n) => !shown.has(n) && !inRanked.has(n))
      .sort(),
  ];
  let catalog = '';
  let listed = 0;
  for (const name of others) {
    const piece = (listed ? ', ' : '') + name;
    if (catalog.length + piece.length > catalogRoom - 160) break;
    catalog += piece;
    listed++;
  }
  const parts = [pieces.join('\n')];
  if (others.length)
    parts.push(
      `\nOther tables (${others.length}, the next best matches first; not described above — use search_schema or describe_tables before querying them): ${catalog}${
        listed < others.length ? `, … and ${others.length - listed} more` : ''
      }`,
    );
  return {
    text: parts.join('\n'),
    detailed: detailed.map((t) => t.name),
    total: tables.length,
    partial: others.length > 0,
  };
}

/** Finds tables by name for describe_tables (full or bare name, case-insensitive). */
export function findTables(tables: TableInfo[], names: string[]): { found: TableInfo[]; missing: string[] } {
  const found: TableInfo[] = [];
  const missing: string[] = [];
  for (const name of names) {
    const n = name
      .trim()
      .toLowerCase()
      .replace(/["`[\]]/g, '');
    const t =
      tables.find((x) => x.name.toLowerCase() === n) ??
      tables.find((x) => bareName(x.name).toLowerCase() === bareName(n));
    if (t) {
      if (!found.includes(t)) found.push(t);
    } else missing.push(name);
  }
  return { found, missing };
}
