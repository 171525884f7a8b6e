import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { embeddingSettings } from '../ai/embeddings';
import { callModel, type ToolCall } from '../ai/model';
import type { AiProvider } from '../ai/provider';
import type { AuthContext } from '../auth/context';
import { semanticRanking } from '../connections/embedding-index';
import { executeReadOnly } from '../connections/execute';
import type { ColumnValues } from '../connections/value-index';
import type { DbType, QueryResult, TableInfo } from '../databases/drivers/types';
import { AppError, isAppError } from '../platform/errors';
import { logger } from '../platform/logger';
import { classifyIntent, type Intent } from './intent';
import { boundLoopMessages, buildMessages, FIRST_PROMPT_LIMIT, type HistoryMessage } from './prompt';
import type { ChatStep } from './response';
import {
  buildSchemaContext,
  CATALOG_BUDGET,
  clip,
  findTables,
  type NoteLike,
  renderTable,
  SCHEMA_BUDGET,
  schemaFitsWhole,
} from './schema-context';
import { SEARCH_SCHEMA_LIMIT, schemaSearchLines, searchSchema } from './schema-search';
import type { ChatEvent } from './sse';
import {
  errorForModel,
  parseArguments,
  resultForModel,
  summarizeResult,
  TOOL_RESULT_CHARS,
  toolDefinitions,
} from './tools';

/** Model calls for one answer at most (the last one is made without tools). */
export const MAX_MODEL_CALLS = 8;
/** Failed queries at most: the first attempt and 3 repairs. */
export const MAX_FAILED_QUERIES = 4;
/** Queries for one answer at most. */
export const MAX_QUERIES = 6;
/** After this long the next model call is the last one (the chat function runs for at most 300 s). */
export const ANSWER_BUDGET_MS = 150_000;
/** Query errors that rewriting the SQL cannot fix. */
const NOT_REPAIRABLE = new Set([
  'NOT_FOUND',
  'CONNECTION_INACTIVE',
  'CONNECTION_FAILED',
  'CREDITS_EXHAUSTED',
]);

export interface AssistantInput {
  ai: AiProvider;
  ctx: AuthContext;
  connection: { id: string; name: string; type: DbType; database: string } | null;
  availableConnections?: Array<{ id: string; name: string; type: DbType }>;
  tables: TableInfo[] | null;
  notes: NoteLike[];
  /** The connection's usable sampled values (value index), [] or absent when none. */
  values?: ColumnValues[];
  /** The schema's content key (schemaKey in schema-index.ts); absent: the schema is digested. */
  schemaKey?: string;
  schemaSummary: string | null;
  history: HistoryMessage[];
  question: string;
  /** Streaming: receives step, sql, result and delta events as they happen. */
  emit?: (event: ChatEvent) => void;
  signal?: AbortSignal;
}

export interface AssistantResult {
  content: string;
  sqlQuery: string | null;
  queryResult: QueryResult | null;
  resultSummary: string | null;
  intent: Intent;
  steps: ChatStep[];
  usage: { model: string; promptTokens: number; completionTokens: number };
}

/**
 * The function that chooses the tables of the first prompt. A seam for the linking benchmark
 * (bench/linking.ts), which measures the retrieval before issue 16 against this one in the same run.
 */
export let schemaContextBuilder: typeof buildSchemaContext = buildSchemaContext;
export function setSchemaContextBuilder(fn: typeof buildSchemaContext): void {
  schemaContextBuilder = fn;
}

/** Bytes of JSON the schema text may take: what the first request leaves of FIRST_PROMPT_LIMIT. */
function schemaRoom(
  base: Omit<Parameters<typeof buildMessages>[0], 'schema'>,
  tools: ReturnType<typeof toolDefinitions> | undefined,
): number {
  const probe = buildMessages({ ...base, schema: { text: '', detailed: [], total: 0, partial: true } });
  // The request also carries the model name, options and JSON punctuation: 600 bytes of margin.
  const fixed = Buffer.byteLength(JSON.stringify({ messages: probe, tools })) + 600;
  // JSON escaping of newlines and quotes, and multi-byte characters: the schema text's bytes are
  // counted as 1.1 per character.
  return Math.floor((FIRST_PROMPT_LIMIT - fixed) / 1.1);
}

/** Characters the first request leaves for the schema text of this input (SCHEMA_BUDGET + CATALOG_BUDGET at most). */
function schemaRoomOf(input: Omit<AssistantInput, 'ai' | 'ctx'>): number {
  const base = {
    connection: input.connection,
    availableConnections: input.availableConnections,
    schemaSummary: input.schemaSummary,
    history: input.history,
    question: input.question,
  };
  if (!input.connection) return 0;
  return Math.min(
    SCHEMA_BUDGET + CATALOG_BUDGET,
    schemaRoom(base, toolDefinitions(input.connection.type, true)),
  );
}

/**
 * The schema part of the first request, exactly as runAssistant builds it (also used by the linking
 * benchmark, which measures first requests without a model): the question's ranked tables within the
 * room the rest of the request leaves under FIRST_PROMPT_LIMIT.
 */
export function firstSchemaContext(
  input: Omit<AssistantInput, 'ai' | 'ctx'>,
  semantic?: number[],
): ReturnType<typeof buildSchemaContext> {
  const earlier = input.history.filter((m) => m.role === 'USER').map((m) => m.content);
  const earlierSql = input.history.flatMap((m) => (m.sqlQuery ? [m.sqlQuery] : []));
  return schemaContextBuilder(input.tables ?? [], input.notes, input.question, earlier, {
    earlierSql,
    maxChars: schemaRoomOf(input),
    semantic,
    values: input.values,
    indexKey: input.schemaKey,
  });
}

const FALLBACK_ANSWER = 'I could not produce an answer to that question. Please rephrase it or add detail.';

/**
 * Answers one question: builds the bounded context, then lets the model call tools (run a read-only
 * query, search or describe tables) until it answers in text. Every model call is accounted (feature
 * `chat`); a failed query's error goes back to the model to repair (at most 3 repairs); only the first
 * 20 rows of any result are ever sent to the model.
 */
export async function runAssistant(input: AssistantInput): Promise<AssistantResult> {
  const { ctx, connection } = input;
  const emit = input.emit ?? (() => {});
  const tables = input.tables ?? [];
  const base = {
    connection,
    availableConnections: input.availableConnections,
    schemaSummary: input.schemaSummary,
    history: input.history,
    question: input.question,
  };
  let schema = null as ReturnType<typeof buildSchemaContext> | null;
  if (connection && input.tables) {
    // A schema too large to describe whole is narrowed; the embedding index (when configured and built)
    // adds its ranking of the question. It never fails the answer: lexical ranking is the fallback.
    const semantic =
      !embeddingSettings() || schemaFitsWhole(tables, input.notes, input.question, schemaRoomOf(input))
        ? undefined
        : await semanticRanking({
            who: { orgId: ctx.orgId, userId: ctx.userId },
            connectionId: connection.id,
            tables,
            question: input.question,
          });
    schema = firstSchemaContext(input, semantic);
  }
  const messages: ChatCompletionMessageParam[] = buildMessages({ ...base, schema });

  const steps: ChatStep[] = [];
  let content = '';
  let promptTokens = 0;
  let completionTokens = 0;
  let model = input.ai.model;
  let failures = 0;
  let queries = 0;
  let queryAllowed = true;
  let lookedUpSchema = false;
  let last = null as { sql: string; result: QueryResult } | null;

  // Text of every turn is part of the answer; turns are separated by a blank line, streamed as it comes.
  const appendText = (text: string, turnHasText: { v: boolean }) => {
    if (!text) return;
    let piece = text;
    if (!turnHasText.v && content.length) piece = `\n\n${piece.replace(/^\s+/, '')}`;
    else if (!turnHasText.v) piece = piece.replace(/^\s+/, '');
    if (!piece) return;
    turnHasText.v = true;
    content += piece;
    emit({ type: 'delta', content: piece });
  };

  const started = Date.now();
  for (let call = 1; ; call++) {
    if (input.signal?.aborted) throw new AppError(499, 'CLIENT_CLOSED', 'The request was cancelled.');
    const final = call >= MAX_MODEL_CALLS || Date.now() - started > ANSWER_BUDGET_MS;
    const tools = connection ? toolDefinitions(connection.type, queryAllowed) : undefined;
    boundLoopMessages(messages);
    const turnHasText = { v: false };
    const turn = await callModel({
      ai: input.ai,
      who: { orgId: ctx.orgId, userId: ctx.userId },
      feature: 'chat',
      messages,
      tools,
      toolChoice: final ? 'none' : 'auto',
      temperature: 0,
      onDelta: input.emit ? (t) => appendText(t, turnHasText) : undefined,
      signal: input.signal,
    });
    promptTokens += turn.promptTokens;
    completionTokens += turn.completionTokens;
    model = turn.model;
    if (!input.emit) appendText(turn.content, turnHasText);
    if (!turn.toolCalls.length || final || !tools) break;

    messages.push({
      role: 'assistant',
      content: turn.content || null,
      tool_calls: turn.toolCalls.map((t) => ({
        id: t.id,
        type: 'function' as const,
        function: { name: t.name, arguments: t.arguments },
      })),
    });
    for (const tc of turn.toolCalls) {
      const reply = await runTool(tc);
      messages.push({ role: 'tool', tool_call_id: tc.id, content: clip(reply, TOOL_RESULT_CHARS) });
    }
    if (!queryAllowed && failures >= MAX_FAILED_QUERIES)
      messages.push({
        role: 'system',
        content:
          'The query could not be repaired within 3 attempts. Do not call run_query again: explain the problem to the user.',
      });
  }

  if (!content.trim()) {
    content = '';
    appendText(FALLBACK_ANSWER, { v: false });
  }
  const intent = classifyIntent({
    question: input.question,
    answer: content,
    hasHistory: input.history.length > 0,
    ranQuery: queries > 0,
    lookedUpSchema,
    hasConnection: !!connection,
  });
  return {
    content,
    sqlQuery: last?.sql ?? null,
    queryResult: last?.result ?? null,
    resultSummary: last ? summarizeResult(last.result) : null,
    intent,
    steps,
    usage: { model, promptTokens, completionTokens },
  };

  async function runTool(tc: ToolCall): Promise<string> {
    const parsed = parseArguments(tc.arguments);
    const step = (s: Omit<ChatStep, 'queryResult' | 'queryError'> & Partial<ChatStep>) => {
      const full: ChatStep = { queryResult: null, queryError: null, ...s };
      steps.push(full);
      emit({ type: 'step', ...full });
    };
    if (tc.name === 'run_query') {
      const sql = parsed.ok && typeof parsed.value.sql === 'string' ? parsed.value.sql.trim() : '';
      const purpose =
        parsed.ok && typeof parsed.value.purpose === 'string' && parsed.value.purpose.trim()
          ? clip(parsed.value.purpose.trim(), 200)
          : 'Ran a query';
      if (!queryAllowed) {
        const why =
          failures >= MAX_FAILED_QUERIES
            ? 'the query could not be repaired within 3 attempts'
            : `at most ${MAX_QUERIES} queries run for one question`;
        step({
          action: 'run_query',
          detail: `${purpose}: not run (${why})`,
          sql: sql || null,
          queryError: `Not run: ${why}.`,
        });
        return JSON.stringify({
          ok: false,
          error: `run_query is no longer available: ${why}. Answer with what you have.`,
        });
      }
      if (!sql) {
        failures++;
        if (failures >= MAX_FAILED_QUERIES) queryAllowed = false;
        const message = parsed.ok ? 'The tool call did not contain any SQL.' : parsed.error;
        step({
          action: 'run_query',
          detail: `${purpose}: invalid tool call`,
          sql: null,
          queryError: message,
        });
        return JSON.stringify({ ok: false, error: message, hint: 'Call run_query with {"sql": "..."}.' });
      }
      queries++;
      if (queries >= MAX_QUERIES) queryAllowed = false;
      emit({ type: 'sql', sql });
      try {
        const result = await executeReadOnly(ctx, connection!.id, {
          sql,
          question: clip(input.question, 2000),
          source: 'chat',
        });
        last = { sql, result };
        emit({
          type: 'result',
          columns: result.columns,
          rows: result.rows,
          rowCount: result.rowCount,
          executionTime: result.executionTime,
          truncated: !!result.truncated,
        });
        step({
          action: 'run_query',
          detail: `${purpose}: ${result.rowCount} row${result.rowCount === 1 ? '' : 's'}${result.truncated ? ' (capped)' : ''}`,
          sql,
          queryResult: {
            columns: result.columns,
            rowCount: result.rowCount,
            executionTime: result.executionTime,
          },
        });
        return resultForModel(result);
      } catch (e) {
        const err = asAppError(e);
        failures++;
        if (failures >= MAX_FAILED_QUERIES || NOT_REPAIRABLE.has(err.code)) queryAllowed = false;
        step({
          action: 'run_query',
          detail: `${purpose}: failed (${err.code})`,
          sql,
          queryError: err.message,
        });
        return errorForModel(err, queryAllowed);
      }
    }
    // search_tables: the earlier name of search_schema (with `keywords`), still answered.
    if (tc.name === 'search_schema' || tc.name === 'search_tables') {
      lookedUpSchema = true;
      const arg = parsed.ok ? (parsed.value.query ?? parsed.value.keywords) : undefined;
      const query = typeof arg === 'string' ? arg.trim() : '';
      const found = query
        ? searchSchema(
            { tables, notes: input.notes, values: input.values, indexKey: input.schemaKey },
            query,
            SEARCH_SCHEMA_LIMIT,
          )
        : [];
      step({
        action: tc.name,
        detail: `Searched the schema for "${clip(query, 100)}": ${found.length} match${found.length === 1 ? '' : 'es'}`,
        sql: null,
      });
      if (!tables.length)
        return JSON.stringify({ ok: false, error: 'The schema of this connection has not been read yet.' });
      if (!query)
        return JSON.stringify({
          ok: false,
          error: 'Call search_schema with {"query": "words or the question"}.',
        });
      return JSON.stringify({
        ok: true,
        tables: schemaSearchLines(found),
        ...(found.length ? {} : { note: 'No table matched; try other words.' }),
      });
    }
    if (tc.name === 'describe_tables') {
      lookedUpSchema = true;
      const names =
        parsed.ok && Array.isArray(parsed.value.tables)
          ? parsed.value.tables.filter((n): n is string => typeof n === 'string').slice(0, 10)
          : [];
      const { found, missing } = findTables(tables, names);
      step({
        action: 'describe_tables',
        detail: `Read the definitions of ${found.map((t) => t.name).join(', ') || 'no table'}${missing.length ? ` (not found: ${missing.join(', ')})` : ''}`,
        sql: null,
      });
      let text = '';
      for (const t of found) {
        const r = renderTable(t, input.notes, { maxColumns: 200 });
        if (text.length + r.length > TOOL_RESULT_CHARS - 300) {
          text += `\n(${t.name} and later tables omitted: ask for fewer tables at a time)`;
          break;
        }
        text += `${text ? '\n' : ''}${r}`;
      }
      return JSON.stringify({
        ok: found.length > 0,
        definitions: text,
        ...(missing.length ? { notFound: missing } : {}),
      });
    }
    step({
      action: 'invalid_tool_call',
      detail: `Unknown tool "${clip(tc.name, 60)}"`,
      sql: null,
      queryError: null,
    });
    return JSON.stringify({ ok: false, error: `There is no tool named "${tc.name}".` });
  }
}

function asAppError(e: unknown): AppError {
  if (isAppError(e)) return e;
  logger().error('Chat query failed unexpectedly', { error: e instanceof Error ? e.message : String(e) });
  return new AppError(500, 'INTERNAL_ERROR', 'The query failed unexpectedly.');
}
