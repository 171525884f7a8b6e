import { indexFor, notesByTable, terms } from '../connections/schema-index';
import type { ColumnValues } from '../connections/value-index';
import type { TableInfo } from '../databases/drivers/types';
import { clip, type NoteLike, rankTables, renderTableBrief, valuesNamed } from './schema-context';

/** Characters of one search_schema reply at most (a tool result is clipped to 6,000). */
const REPLY_CHARS = 5_600;

/** One table found by searchSchema. */
export interface SchemaMatch {
  /** The table's name as chat and run_query use it (`orders`, or `sales.orders` outside the default schema). */
  table: string;
  /** Relevance, higher is better; only comparable within one search. */
  score: number;
  /** The table in one line: `TABLE name (~rows): column type PK → ref, …` (what the first request shows). */
  description: string;
}

/**
 * Ranks a connection's tables for a free-text query: the same ranking that chooses the first chat
 * request's tables, over the whole schema. `schema` is the connection's introspected tables and its
 * annotations (notes; [] when none); at most `limit` matches, best first; [] for a query without words.
 */
export function searchSchema(
  schema: { tables: TableInfo[]; notes?: NoteLike[]; values?: ColumnValues[]; indexKey?: string },
  query: string,
  limit = 10,
): SchemaMatch[] {
  const notes = schema.notes ?? [];
  const questionTerms = new Set(terms(query));
  const notesFor = notesByTable(notes);
  const index = indexFor(schema.tables, notes, schema.values ?? [], schema.indexKey);
  const named = valuesNamed(index, query);
  return rankTables(schema.tables, notes, query, index)
    .slice(0, Math.max(0, limit))
    .map(({ table, score }) => ({
      table: table.name,
      score,
      description: renderTableBrief(table, {
        maxColumns: 40,
        notes: notesFor(table),
        questionTerms,
        values: named.get(table.name),
      }),
    }));
}

/** Tables one search_schema call returns at most. */
export const SEARCH_SCHEMA_LIMIT = 12;

/** Matches as the search_schema tool gives them to the model: one line each, REPLY_CHARS in all at most. */
export function schemaSearchLines(found: SchemaMatch[]): string[] {
  const lines: string[] = [];
  let used = 0;
  for (const m of found) {
    const line = clip(m.description, 1_500);
    if (used + line.length + 1 > REPLY_CHARS) break;
    lines.push(line);
    used += line.length + 1;
  }
  return lines;
}

/** What the search_schema tool finds for a query, as text (the linking benchmark's second chance). */
export const schemaSearchReply = (
  tables: TableInfo[],
  notes: NoteLike[],
  query: string,
  values: ColumnValues[] = [],
  indexKey?: string,
) =>
  schemaSearchLines(searchSchema({ tables, notes, values, indexKey }, query, SEARCH_SCHEMA_LIMIT)).join('\n');

/**
 * The tables searchSchema ranks first, as the introspected tables themselves (the MCP endpoint's
 * search_schema tool answers them with their columns, keys, references and annotations).
 */
export function linkedTables(
  tables: TableInfo[],
  notes: NoteLike[],
  text: string,
  limit: number,
): TableInfo[] {
  return rankTables(tables, notes, text)
    .slice(0, Math.max(0, limit))
    .map(({ table }) => table);
}
