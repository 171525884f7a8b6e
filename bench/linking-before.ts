/**
 * The schema retrieval of shared/chat/schema-context.ts before issue 16 (word overlap, 30 tables / 14,000
 * characters), frozen here so that the linking benchmark measures before and after in the same run.
 */
import type { TableInfo } from '../shared/databases/drivers/types';

/** The annotation fields the assistant uses (a subset of the connections capability's Annotation). */
export interface NoteLike {
  tableName: string;
  columnName: string | null;
  annotation: string;
  dataType?: string | null;
  examples?: string | null;
}

/** Characters of detailed table definitions in the first prompt. */
export const SCHEMA_BUDGET = 14_000;
/** Characters of the name-only list of the other tables. */
export const CATALOG_BUDGET = 3_000;
/** Detailed tables in the first prompt at most. */
export const MAX_DETAILED_TABLES = 30;
/** Columns shown per table before "+N more". */
export const MAX_COLUMNS_SHOWN = 60;
const NOTE_CHARS = 240;

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

interface Indexed {
  table: TableInfo;
  nameWords: Set<string>;
  columnWords: Set<string>;
  noteWords: Set<string>;
}

function index(table: TableInfo, notes: NoteLike[]): Indexed {
  const tableNotes = notesOf(table, notes);
  return {
    table,
    nameWords: new Set(words(bareName(table.name))),
    columnWords: new Set(table.columns.flatMap((c) => words(c.name))),
    noteWords: new Set(tableNotes.flatMap((n) => words(`${n.annotation} ${n.examples ?? ''}`))),
  };
}

const near = (a: string, b: string) => a.length >= 4 && b.length >= 4 && (a.startsWith(b) || b.startsWith(a));

/** Relevance of a table to a set of question words: name hits weigh most, then columns, then annotations. */
export function scoreTable(ix: Indexed, qWords: string[], questionLower: string): number {
  let score = 0;
  // A name hit weighs 6 when the name is one word; names with words the question lacks weigh less.
  const perNameWord = 6 / Math.max(1, ix.nameWords.size);
  for (const q of new Set(qWords)) {
    if (ix.nameWords.has(q)) score += Math.max(perNameWord, 2.5);
    else if ([...ix.nameWords].some((n) => near(n, q))) score += Math.max(perNameWord / 2, 1.25);
    if (ix.columnWords.has(q)) score += 2;
    else if ([...ix.columnWords].some((n) => near(n, q))) score += 0.5;
    if (ix.noteWords.has(q)) score += 1.5;
  }
  const bare = bareName(ix.table.name).toLowerCase();
  if (bare.length >= 3 && new RegExp(`\\b${escapeRe(bare)}\\b`).test(questionLower)) score += 8;
  return score;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Tables ranked by relevance to the text (only those that match at all), best first. */
export function rankTables(
  tables: TableInfo[],
  notes: NoteLike[],
  text: string,
): Array<{ table: TableInfo; score: number }> {
  const q = words(text);
  const lower = text.toLowerCase();
  return tables
    .map((t) => ({ table: t, score: scoreTable(index(t, notes), q, lower) }))
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || a.table.name.localeCompare(b.table.name));
}

/** A table's definition as compact text: columns with types, keys, references and annotations. */
export function renderTable(
  table: TableInfo,
  notes: NoteLike[],
  opts: { focus?: string[]; maxColumns?: number } = {},
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
  const head = `${kind} ${table.name}${rows}${tableNote ? ` -- ${clip(tableNote.annotation, NOTE_CHARS)}` : ''}`;
  const focus = new Set((opts.focus ?? []).map((w) => w.toLowerCase()));
  let cols = table.columns;
  if (cols.length > maxColumns) {
    // Keep key, referencing, annotated and question-matching columns first, then the rest in order.
    const important = (c: (typeof cols)[number]) =>
      c.primaryKey ||
      fkOf.has(c.name) ||
      colNote.has(c.name.toLowerCase()) ||
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
    const n = colNote.get(c.name.toLowerCase());
    if (n) {
      const extra = [n.annotation, n.examples ? `examples: ${n.examples}` : ''].filter(Boolean).join('; ');
      bits.push(`-- ${clip(extra, NOTE_CHARS)}`);
    }
    lines.push(bits.join(' '));
  }
  if (table.columns.length > cols.length)
    lines.push(`  … +${table.columns.length - cols.length} more columns (describe_tables shows all)`);
  return lines.join('\n');
}

export const clip = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

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

/**
 * Chooses the tables the prompt describes. A schema that fits the budget is given whole. A large one
 * (hundreds of tables) is narrowed: tables matching the question's words (names, columns, annotations;
 * the earlier questions of the conversation count at half weight), then the tables they reference or
 * that reference them, until the character budget; the rest are listed by name only while that list
 * fits, and the search_tables / describe_tables tools reach everything else. The result is bounded by
 * SCHEMA_BUDGET + CATALOG_BUDGET whatever the schema's size.
 */
export function buildSchemaContext(
  tables: TableInfo[],
  notes: NoteLike[],
  question: string,
  earlierQuestions: string[] = [],
): SchemaContext {
  const rendered = new Map<string, string>();
  const render = (t: TableInfo) => {
    let r = rendered.get(t.name);
    if (r === undefined) {
      r = renderTable(t, notes, { focus: words(question) });
      rendered.set(t.name, r);
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

  const all = tables.reduce((n, t) => n + render(t).length + 1, 0);
  if (all <= SCHEMA_BUDGET && tables.length <= MAX_DETAILED_TABLES * 2)
    return {
      text: tables.map(render).join('\n'),
      detailed: tables.map((t) => t.name),
      total: tables.length,
      partial: false,
    };

  const scores = new Map<string, number>();
  for (const r of rankTables(tables, notes, question)) scores.set(r.table.name, r.score);
  for (const q of earlierQuestions)
    for (const r of rankTables(tables, notes, q))
      scores.set(r.table.name, (scores.get(r.table.name) ?? 0) + r.score / 2);
  const byName = new Map(tables.map((t) => [t.name.toLowerCase(), t]));
  const byBare = new Map(tables.map((t) => [bareName(t.name).toLowerCase(), t]));
  const lookup = (name: string) => byName.get(name.toLowerCase()) ?? byBare.get(bareName(name).toLowerCase());

  const ranked = tables
    .filter((t) => (scores.get(t.name) ?? 0) > 0)
    .sort((a, b) => (scores.get(b.name) ?? 0) - (scores.get(a.name) ?? 0) || a.name.localeCompare(b.name));
  const order: TableInfo[] = [];
  const seen = new Set<string>();
  const add = (t: TableInfo | undefined) => {
    if (t && !seen.has(t.name)) {
      seen.add(t.name);
      order.push(t);
    }
  };
  for (const t of ranked) add(t);
  // Neighbours of the best matches, so that joins are writable without a lookup.
  for (const t of ranked.slice(0, 8)) {
    for (const fk of t.foreignKeys) add(lookup(fk.referencedTable));
    for (const other of tables)
      if (other.foreignKeys.some((fk) => lookup(fk.referencedTable)?.name === t.name)) add(other);
  }
  // Nothing matched: start from the largest tables.
  if (!order.length)
    [...tables]
      .sort((a, b) => (b.rowEstimate ?? -1) - (a.rowEstimate ?? -1) || a.name.localeCompare(b.name))
      .forEach(add);

  const detailed: TableInfo[] = [];
  let used = 0;
  for (const t of order) {
    if (detailed.length >= MAX_DETAILED_TABLES) break;
    let r = render(t);
    if (r.length > SCHEMA_BUDGET / 2) {
      r = renderTable(t, notes, { focus: words(question), maxColumns: 25 });
      rendered.set(t.name, r);
    }
    if (used + r.length + 1 > SCHEMA_BUDGET) continue;
    detailed.push(t);
    used += r.length + 1;
  }
  const shown = new Set(detailed.map((t) => t.name));
  const others = tables
    .filter((t) => !shown.has(t.name))
    .map((t) => t.name)
    .sort();
  let catalog = '';
  let listed = 0;
  for (const name of others) {
    const piece = (listed ? ', ' : '') + name;
    if (catalog.length + piece.length > CATALOG_BUDGET - 80) break;
    catalog += piece;
    listed++;
  }
  const parts = [detailed.map(render).join('\n')];
  if (others.length)
    parts.push(
      `\nOther tables (${others.length}; not described above — use search_tables or describe_tables before querying them): ${catalog}${
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

/** Finds tables for the search_tables tool: ranked matches of the keywords, as one-line summaries. */
export function searchTables(tables: TableInfo[], notes: NoteLike[], keywords: string, limit = 15): string[] {
  return rankTables(tables, notes, keywords)
    .slice(0, limit)
    .map(({ table }) => {
      const note = notesOf(table, notes).find((n) => n.columnName === null);
      const cols = table.columns.map((c) => c.name);
      const colText = cols.slice(0, 25).join(', ') + (cols.length > 25 ? `, … +${cols.length - 25}` : '');
      return `${table.name}(${colText})${note ? ` -- ${clip(note.annotation, 120)}` : ''}`;
    });
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
