import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { DbType, QueryResult } from '../databases/drivers/types';
import type { AppError } from '../platform/errors';
import { clip } from './schema-context';

/** Rows of a result the model ever sees. */
export const MODEL_ROWS = 20;
/** Characters of one value the model sees. */
const VALUE_CHARS = 200;
/** Characters of one tool result sent back to the model. */
export const TOOL_RESULT_CHARS = 6_000;

export type ToolName = 'run_query' | 'search_schema' | 'describe_tables';

/** The tools offered to the model: running a read-only query (when allowed) and looking up tables. */
export function toolDefinitions(type: DbType, canQuery: boolean): ChatCompletionTool[] {
  const mongo = type === 'MONGODB';
  const tools: ChatCompletionTool[] = [];
  if (canQuery)
    tools.push({
      type: 'function',
      function: {
        name: 'run_query',
        description: mongo
          ? 'Run one read-only MongoDB query on the connected database and get its result (at most 20 rows are shown to you). The query is a JSON string: {"collection": "...", "pipeline": [...]} or {"collection": "...", "filter": {...}, "projection": {...}, "sort": {...}, "limit": n}.'
          : 'Run one read-only SQL statement (SELECT / WITH … SELECT) on the connected database and get its result (at most 20 rows are shown to you; the user sees the full result). Writes are refused.',
        parameters: {
          type: 'object',
          properties: {
            sql: {
              type: 'string',
              description: mongo
                ? 'The MongoDB query as a JSON string.'
                : 'One SQL statement in the database’s dialect.',
            },
            purpose: { type: 'string', description: 'A few words on what this query finds out.' },
          },
          required: ['sql'],
          additionalProperties: false,
        },
      },
    });
  tools.push(
    {
      type: 'function',
      function: {
        name: 'search_schema',
        description:
          'Search the whole database schema for the tables a question needs: ranks every table by its name, columns, annotations and sampled values (word forms and compound names included) and returns the best matches with their columns. Use it when a table you need is not described above.',
        parameters: {
          type: 'object',
          properties: {
            query: {
              type: 'string',
              description:
                'The question, or words for what the missing table holds, e.g. "gas station country".',
            },
          },
          required: ['query'],
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'describe_tables',
        description:
          'Get the full definitions (columns, types, keys, references, annotations) of up to 10 tables by name.',
        parameters: {
          type: 'object',
          properties: { tables: { type: 'array', items: { type: 'string' }, maxItems: 10 } },
          required: ['tables'],
          additionalProperties: false,
        },
      },
    },
  );
  return tools;
}

function clipValue(v: unknown): unknown {
  if (typeof v === 'string') return clip(v, VALUE_CHARS);
  if (v !== null && typeof v === 'object') {
    const s = JSON.stringify(v);
    return s.length > VALUE_CHARS ? clip(s, VALUE_CHARS) : v;
  }
  return v;
}

/** The first rows of a result, at most MODEL_ROWS, with long values clipped: all the model ever sees of data. */
export function rowsForModel(r: QueryResult, max = MODEL_ROWS): Record<string, unknown>[] {
  return r.rows.slice(0, Math.min(max, MODEL_ROWS)).map((row) => {
    const out: Record<string, unknown> = {};
    for (const c of r.columns) out[c] = clipValue(row[c]);
    return out;
  });
}

/** A successful query as the tool result the model reads (bounded to TOOL_RESULT_CHARS). */
export function resultForModel(r: QueryResult): string {
  for (let n = Math.min(MODEL_ROWS, r.rows.length); n >= 0; n = n > 5 ? n - 5 : n - 1) {
    const shown = rowsForModel(r, n);
    const text = JSON.stringify({
      ok: true,
      columns: r.columns,
      rowCount: r.rowCount,
      truncated: !!r.truncated,
      rowsShown: shown.length,
      ...(shown.length < r.rowCount ? { note: `Only the first ${shown.length} rows are shown to you.` } : {}),
      rows: shown,
    });
    if (text.length <= TOOL_RESULT_CHARS || n === 0) return clip(text, TOOL_RESULT_CHARS);
  }
  return '{"ok":true}';
}

/** A failed query as the tool result: the database's own message, so that the model can repair it. */
export function errorForModel(e: AppError, canRetry: boolean): string {
  const details = (e.details ?? {}) as Record<string, unknown>;
  return JSON.stringify({
    ok: false,
    code: e.code,
    error: clip(e.message, 1_000),
    ...(details.code ? { databaseCode: details.code } : {}),
    ...(details.position ? { position: details.position } : {}),
    hint:
      e.code === 'READ_ONLY_VIOLATION'
        ? 'Only one read-only statement is allowed; Loupe never changes data. Do not retry a write: tell the user it is not allowed.'
        : canRetry
          ? 'Fix the query and call run_query again.'
          : 'Do not retry; explain the problem to the user.',
  });
}

/** A short stored summary of a result (kept with the assistant message and shown to later turns). */
export function summarizeResult(r: QueryResult): string {
  const head = `${r.rowCount} row${r.rowCount === 1 ? '' : 's'}${r.truncated ? ' (capped)' : ''}; columns: ${r.columns.join(', ')}`;
  const first = rowsForModel(r, 3).map((row) => JSON.stringify(row));
  return clip(first.length ? `${head}; first rows: ${first.join(' ')}` : head, 500);
}

/** Parses a tool call's JSON arguments; malformed JSON gives an error message for the model. */
export function parseArguments(
  text: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  try {
    const v = JSON.parse(text || '{}');
    if (v && typeof v === 'object' && !Array.isArray(v))
      return { ok: true, value: v as Record<string, unknown> };
    return { ok: false, error: 'Tool arguments must be a JSON object.' };
  } catch (e) {
    return { ok: false, error: `Tool arguments were not valid JSON: ${(e as Error).message}` };
  }
}
