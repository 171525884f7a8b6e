import type { DbType, TableInfo } from '../databases/drivers/types';
import { logger } from '../platform/logger';
import { remainingCents } from '../usage/balance';
import { callModel } from './model';
import { aiProvider } from './provider';

/** One annotation text for a table (columnName null) or a column, as the model or a user writes it. */
export interface AnnotationInput {
  tableName: string;
  columnName: string | null;
  annotation: string;
  dataType?: string | null;
  examples?: string | null;
}

const TABLE_NOTE_CHARS = 500;
const COLUMN_NOTE_CHARS = 300;
/** Columns described per model call at most (wider tables keep the deterministic text for the rest). */
const MAX_COLUMNS = 120;
const ANNOTATE_TIMEOUT_MS = 30_000;

/**
 * Model-written annotations for one table (feature `auto_annotation`, paid by the user who asked), or
 * null when no model is configured, the balance is used up, or the call fails or answers unusably: the
 * caller then keeps the deterministic annotations. The model is sent the table's definition and the
 * deterministic facts, including the few example values the deterministic annotator would store anyway
 * (never values of columns whose names suggest secrets or personal data, and never whole rows).
 * Data types and examples stay the deterministic ones; the model writes the descriptions.
 */
export async function modelAnnotations(
  who: { orgId: string; userId: string },
  connection: { name: string; type: DbType },
  table: TableInfo,
  base: AnnotationInput[],
): Promise<AnnotationInput[] | null> {
  try {
    const ai = await aiProvider();
    if (!ai) return null;
    if (!((await remainingCents(who.orgId, who.userId)) > 0)) return null;
    const cols = base.filter((a) => a.columnName !== null).slice(0, MAX_COLUMNS);
    const tableFacts = base.find((a) => a.columnName === null)?.annotation ?? '';
    const lines = [
      `Database "${connection.name}" (${connection.type}). ${table.kind} ${table.name}: ${tableFacts}`,
      'Columns:',
      ...cols.map(
        (c) =>
          `- ${c.columnName} (${c.dataType ?? '?'}): ${c.annotation}${c.examples ? ` Examples: ${c.examples}` : ''}`,
      ),
    ];
    const turn = await callModel({
      ai,
      who,
      feature: 'auto_annotation',
      temperature: 0,
      maxTokens: 1_500,
      signal: AbortSignal.timeout(ANNOTATE_TIMEOUT_MS),
      messages: [
        {
          role: 'system',
          content:
            'You document database tables for analysts and for an assistant that writes SQL. From the facts given, write what the table holds and what each column means (units, codes, how it joins), one or two plain sentences each, without inventing facts the names and values do not support. Answer with JSON only: {"table": "description", "columns": {"column_name": "description"}}.',
        },
        { role: 'user', content: lines.join('\n') },
      ],
    });
    const parsed = parseAnnotationJson(turn.content);
    if (!parsed) {
      logger().warn('Model annotations were not usable JSON; keeping the deterministic ones', {
        table: table.name,
      });
      return null;
    }
    return base.map((a) => {
      const text = a.columnName === null ? parsed.table : parsed.columns[a.columnName];
      if (!text) return a;
      const max = a.columnName === null ? TABLE_NOTE_CHARS : COLUMN_NOTE_CHARS;
      return { ...a, annotation: text.length > max ? `${text.slice(0, max - 1)}…` : text };
    });
  } catch (e) {
    logger().warn('Model-written annotations failed; keeping the deterministic ones', {
      table: table.name,
      error: (e as Error).message,
    });
    return null;
  }
}

/** Reads the model's JSON answer (tolerating a Markdown code fence); null unless it has the expected shape. */
export function parseAnnotationJson(
  text: string,
): { table?: string; columns: Record<string, string> } | null {
  const body = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as { table?: unknown; columns?: unknown };
  const table = typeof o.table === 'string' && o.table.trim() ? o.table.trim() : undefined;
  const columns: Record<string, string> = {};
  if (o.columns && typeof o.columns === 'object' && !Array.isArray(o.columns))
    for (const [k, val] of Object.entries(o.columns as Record<string, unknown>))
      if (typeof val === 'string' && val.trim()) columns[k] = val.trim();
  if (!table && !Object.keys(columns).length) return null;
  return { table, columns };
}
