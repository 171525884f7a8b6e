import type { TableInfo } from '../databases/drivers/types';
import { type NoteLike, rankTables } from './schema-context';

/**
 * The tables the chat's schema linking ranks first for a text, best first (only tables that match at
 * all). The one entry point for callers outside the chat (the MCP endpoint's search_schema tool), so
 * that a change to the chat's ranking reaches them too.
 */
export function linkedTables(
  tables: TableInfo[],
  notes: NoteLike[],
  text: string,
  limit: number,
): TableInfo[] {
  return rankTables(tables, notes, text)
    .slice(0, limit)
    .map(({ table }) => table);
}
