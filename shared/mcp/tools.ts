import * as z from 'zod/mini';
import * as approvalsApi from '../approvals/api';
import type { AuthContext } from '../auth/context';
import * as chatApi from '../chat/api';
import * as connectionsApi from '../connections/api';
import * as dashboardsApi from '../dashboards/api';
import type { EndpointSpec } from '../http/endpoint';
import type { Pagination } from '../http/envelope';
import { describe } from '../http/schemas';
import * as metricsApi from '../metrics/api';
import { lazy } from '../platform/lazy';
import * as savedQueriesApi from '../saved-queries/api';
import { type ColumnFormat, count, listText, type Noun, recordText, resultText, words } from './render';

// Loaded on first use and kept (platform/lazy.ts).
const loadSchema = lazy(() => import('../connections/schema'));
const loadConnections = lazy(() => import('../connections/connections'));
const loadAnnotations = lazy(() => import('../connections/annotations'));
const loadChatSchemaSearch = lazy(() => import('../chat/schema-search'));
const loadSchemaIndex = lazy(() => import('../connections/schema-index'));
const loadExecute = lazy(() => import('../connections/execute'));
const loadChat = lazy(() => import('../chat/chat'));
const loadSavedQueries = lazy(() => import('../saved-queries/saved-queries'));
const loadMetrics = lazy(() => import('../metrics/metrics'));
const loadDashboards = lazy(() => import('../dashboards/dashboards'));
const loadWidgets = lazy(() => import('../dashboards/widgets'));
const loadApprovals = lazy(() => import('../approvals/approvals'));

/**
 * The MCP tools. Each is a client of one REST operation (`endpoint`): it takes that operation's scope,
 * admin rule, AI rate limit and request schemas, maps its arguments onto the operation's path, query and
 * body fields (`args`), and calls the same use case with the caller's context. Nothing here adds a rule.
 */

type Part = 'params' | 'query' | 'body';

/** Validated request parts, as the REST handler would receive them, plus the tool's own arguments. */
export interface ToolRequest {
  params: any;
  query: any;
  body: any;
  own: any;
}

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  /** The REST operation this tool is a client of. */
  endpoint: EndpointSpec;
  /** Tool argument → the REST request field it fills. */
  args: Record<string, readonly [Part, string]>;
  /** Arguments the REST operation does not have (validated with this schema). */
  own?: z.ZodMiniObject<any>;
  /** Arguments required here although optional in the REST schema. */
  required?: string[];
  /** Former argument names → the current ones (a call with the old name is refused naming the new one). */
  renamed?: Record<string, string>;
  /** REST request fields the tool sets itself (a list's page and page size). */
  fixed?: Partial<Record<Part, Record<string, unknown>>>;
  readOnly: boolean;
  /** Schema of the structured content (an object). */
  output: () => z.core.$ZodType;
  run(ctx: AuthContext, req: ToolRequest): Promise<Record<string, unknown>>;
  text(data: any): string;
}

const responseOf = (e: EndpointSpec): z.core.$ZodType => {
  const r = typeof e.response === 'function' ? e.response() : e.response;
  if (!r) throw new Error(`${e.method} ${e.path} documents no response`);
  return r;
};

/** Lists are given whole up to this many items (pages of 100 of the REST list). */
export const MAX_LIST_ITEMS = 500;
const PAGE = 100;

async function allPages<T>(
  fetch: (page: number) => Promise<{ data: T[]; pagination: Pagination }>,
): Promise<{ items: T[]; total: number; truncated: boolean }> {
  const items: T[] = [];
  let total = 0;
  for (let page = 1; items.length < MAX_LIST_ITEMS; page++) {
    const r = await fetch(page);
    items.push(...r.data);
    total = r.pagination.total;
    if (page >= r.pagination.totalPages || !r.data.length) break;
  }
  return { items, total, truncated: items.length < total };
}

/** A list tool: the REST list's items under `key`, with the total and whether it was cut at MAX_LIST_ITEMS. */
function listTool(
  def: Omit<ToolDef, 'output' | 'run' | 'text' | 'readOnly' | 'fixed'> & {
    key: string;
    noun: Noun;
    columns: string[];
    /** Columns whose values are lists or objects, said in words. */
    formats?: Record<string, ColumnFormat>;
    /** The table's rows for one item (default: the item itself), e.g. one row per widget of a dashboard. */
    rows?: (item: any) => Record<string, unknown>[];
    list: (ctx: AuthContext, query: any) => Promise<{ data: any[]; pagination: Pagination }>;
  },
): ToolDef {
  const { key, noun, columns, formats, rows, list, ...rest } = def;
  return {
    ...rest,
    readOnly: true,
    fixed: { query: { page: 1, pageSize: PAGE } },
    output: () =>
      z.object({
        [key]: responseOf(def.endpoint),
        total: z.number().check(z.int()),
        truncated: z.boolean(),
      }),
    async run(ctx, req) {
      const r = await allPages((page) => list(ctx, { ...req.query, page, pageSize: PAGE }));
      return { [key]: r.items, total: r.total, truncated: r.truncated };
    },
    text: (d) =>
      listText(
        noun,
        rows ? d[key].flatMap(rows) : d[key],
        columns,
        d.total,
        d.truncated,
        formats,
        d[key].length,
      ),
  };
}

const queryText = (r: any) => resultText(r, [`${r.executionTime} ms.`]);

const SearchSchemaArgs = z.object({
  query: z.string().check(z.trim(), z.minLength(1), z.maxLength(500)),
  limit: z._default(z.number().check(z.int(), z.gte(1), z.lte(50)), 10),
});

const SearchSchemaResult = () =>
  z.object({
    connectionId: z.string(),
    query: z.string(),
    totalTables: z.number().check(z.int()),
    schemaUpdatedAt: z.string(),
    tables: z.array(
      z.extend(connectionsApi.TableSchema(), {
        annotations: z.array(
          z.pick(connectionsApi.Annotation(), {
            columnName: true,
            annotation: true,
            dataType: true,
            examples: true,
            source: true,
          }),
        ),
      }),
    ),
  });

const TABLES: Noun = { one: 'table', many: 'tables' };

/** A saved query's parameter in words: `min (number)`, `since (date, optional, default 2024-01-01)`. */
const parameterWords = (p: { name: string; type: string; required?: boolean; default?: unknown }) =>
  `${p.name} (${[p.type, p.required === false ? 'optional' : '', p.default !== undefined && p.default !== null ? `default ${p.default}` : ''].filter(Boolean).join(', ')})`;

/** Saved queries hold their parameters as an array, or as a string holding the JSON array. */
function parameterList(v: unknown): string {
  let list = v;
  if (typeof v === 'string') {
    try {
      list = JSON.parse(v);
    } catch {
      return v;
    }
  }
  return Array.isArray(list) ? words(list.map(parameterWords)) : String(v);
}

export const tools: ToolDef[] = [
  listTool({
    name: 'list_connections',
    title: 'List connections',
    description:
      'The database connections this key may use (members: the ones assigned to them), with their ids, names and types. Use an id with the other tools.',
    endpoint: connectionsApi.listConnections,
    args: {},
    key: 'connections',
    noun: { one: 'connection', many: 'connections' },
    columns: ['id', 'name', 'type', 'database', 'isActive', 'readOnly'],
    list: async (ctx, q) => (await loadConnections()).listConnections(ctx, q),
  }),
  {
    name: 'search_schema',
    title: 'Search the schema',
    description:
      "The tables of a connection's cached schema that best match a text (the chat's schema linking), best first, with their columns, types, keys, references and annotations. Call it before writing SQL.",
    endpoint: connectionsApi.getSchema,
    args: { connectionId: ['params', 'id'] },
    own: SearchSchemaArgs,
    readOnly: true,
    output: SearchSchemaResult,
    async run(ctx, req) {
      const [{ getSchema }, { annotationsFor }, { linkedTables }, { notesOf }] = await Promise.all([
        loadSchema(),
        loadAnnotations(),
        loadChatSchemaSearch(),
        loadSchemaIndex(),
      ]);
      const [cached, notes] = await Promise.all([
        getSchema(ctx, req.params.id),
        annotationsFor(ctx, req.params.id),
      ]);
      const all = cached.schema.tables;
      const tables = linkedTables(all, notes, req.own.query, req.own.limit).map((t) => ({
        ...t,
        annotations: notesOf(t, notes).map((n: any) => ({
          columnName: n.columnName,
          annotation: n.annotation,
          dataType: n.dataType ?? null,
          examples: n.examples ?? null,
          source: n.source,
        })),
      }));
      return {
        connectionId: req.params.id,
        query: req.own.query,
        totalTables: all.length,
        schemaUpdatedAt: cached.schemaUpdatedAt,
        tables,
      };
    },
    text: (d) =>
      d.tables.length
        ? [
            `${d.tables.length} of ${count(d.totalTables, TABLES)} match${d.tables.length === 1 ? 'es' : ''} "${d.query}", best first:`,
            ...d.tables.map(
              (t: any) =>
                `- ${t.name}(${t.columns.map((c: any) => `${c.name} ${c.type}${c.primaryKey ? ' PK' : ''}`).join(', ')})` +
                t.foreignKeys
                  .map(
                    (f: any) =>
                      ` ${f.columns.join(',')} → ${f.referencedTable}(${f.referencedColumns.join(',')})`,
                  )
                  .join(''),
            ),
          ].join('\n')
        : `None of ${count(d.totalTables, TABLES)} matches "${d.query}".`,
  },
  {
    name: 'run_query',
    title: 'Run a read-only query',
    description:
      'Runs one read-only SQL statement (for MongoDB a JSON query) on a connection, exactly as POST /connections/{id}/query: the read-only guard, a 25 s timeout, at most maxRows rows (default 1000, up to 10000) and 5 MiB. Writes and several statements are refused; use submit_for_approval for those.',
    endpoint: connectionsApi.runQuery,
    args: { connectionId: ['params', 'id'], sql: ['body', 'sql'], maxRows: ['body', 'maxRows'] },
    readOnly: true,
    output: () => responseOf(connectionsApi.runQuery),
    run: async (ctx, req) =>
      (await loadExecute()).executeReadOnly(ctx, req.params.id, {
        sql: req.body.sql,
        maxRows: req.body.maxRows,
        source: 'mcp',
      }) as never,
    text: queryText,
  },
  {
    name: 'ask_question',
    title: 'Ask a question',
    description:
      "Asks Loupe's assistant a question in plain language about a connection's data; it writes and runs read-only SQL and answers with the SQL (sqlQuery) and its result (queryResult). Charged as chat usage. Pass conversationId to continue a conversation.",
    endpoint: chatApi.chat,
    args: {
      connectionId: ['body', 'connectionId'],
      question: ['body', 'message'],
      conversationId: ['body', 'conversationId'],
    },
    required: ['connectionId'],
    // It stores the conversation and charges usage: not a read in MCP's sense.
    readOnly: false,
    output: () => responseOf(chatApi.chat),
    run: async (ctx, req) =>
      ((await (await loadChat()).chat(ctx, { ...req.body, stream: false })) as { data: never }).data,
    text: (d) =>
      [
        d.content,
        d.sqlQuery ? `\nSQL:\n\`\`\`sql\n${d.sqlQuery}\n\`\`\`` : '',
        d.queryResult ? `\n${resultText(d.queryResult)}` : '',
        `\nconversationId: ${d.conversationId}`,
      ]
        .filter(Boolean)
        .join('\n'),
  },
  listTool({
    name: 'list_saved_queries',
    title: 'List saved queries',
    description:
      'Saved queries of the organization (optionally of one connection, or whose tags contain a text), with their parameters. Run one with run_saved_query.',
    endpoint: savedQueriesApi.listSavedQueries,
    args: { connectionId: ['query', 'connectionId'], tags: ['query', 'tags'] },
    key: 'savedQueries',
    noun: { one: 'saved query', many: 'saved queries' },
    columns: ['id', 'name', 'connectionId', 'description', 'parameters', 'tags'],
    formats: {
      parameters: parameterList,
      tags: (t) =>
        words(
          Array.isArray(t)
            ? t
            : String(t)
                .split(/\s*,\s*/)
                .filter(Boolean),
        ),
    },
    list: async (ctx, q) => (await loadSavedQueries()).listSavedQueries(ctx, q),
  }),
  {
    name: 'run_saved_query',
    title: 'Run a saved query',
    description:
      'Runs a saved query with its {{name}} parameters bound as driver parameters (never spliced into the SQL), read-only, at most maxRows rows.',
    endpoint: savedQueriesApi.runSavedQuery,
    args: { id: ['params', 'id'], params: ['body', 'params'], maxRows: ['body', 'maxRows'] },
    readOnly: true,
    output: () => responseOf(savedQueriesApi.runSavedQuery),
    run: async (ctx, req) => (await loadSavedQueries()).runSavedQuery(ctx, req.params.id, req.body) as never,
    text: queryText,
  },
  listTool({
    name: 'list_metrics',
    title: 'List metrics',
    description:
      'Metric definitions of the organization (name, SQL formula, unit). Evaluate one with evaluate_metric.',
    endpoint: metricsApi.listMetrics,
    args: {},
    key: 'metrics',
    noun: { one: 'metric', many: 'metrics' },
    columns: ['id', 'name', 'unit', 'connectionId', 'description'],
    list: async (ctx, q) => (await loadMetrics()).listMetrics(ctx, q),
  }),
  {
    name: 'evaluate_metric',
    title: 'Evaluate a metric',
    description:
      "The metric's current value (first column of the first row of its formula), on its connection or on connectionId.",
    endpoint: metricsApi.getMetricValue,
    args: { id: ['params', 'id'], connectionId: ['query', 'connectionId'] },
    readOnly: true,
    output: () => responseOf(metricsApi.getMetricValue),
    run: async (ctx, req) =>
      (await loadMetrics()).metricValue(ctx, req.params.id, req.query.connectionId) as never,
    text: (d) => recordText('Metric value', d, ['value', 'unit', 'asOf', 'executionTime']),
  },
  listTool({
    name: 'list_dashboards',
    title: 'List dashboards',
    description:
      'Dashboards the key can see, each with its widgets (ids, types, titles). Read a widget with get_widget_data.',
    endpoint: dashboardsApi.listDashboards,
    args: {},
    key: 'dashboards',
    noun: { one: 'dashboard', many: 'dashboards' },
    // One row per widget, with both ids get_widget_data takes.
    columns: ['dashboard', 'dashboardId', 'widget', 'type', 'widgetId'],
    rows: (d) =>
      d.widgets.length
        ? d.widgets.map((w: any) => ({
            dashboard: d.title,
            dashboardId: d.id,
            widget: w.title,
            type: w.type,
            widgetId: w.id,
          }))
        : [{ dashboard: d.title, dashboardId: d.id, widget: '(no widgets)' }],
    list: async (ctx, q) => (await loadDashboards()).listDashboards(ctx, q),
  }),
  {
    name: 'get_widget_data',
    title: 'Get widget data',
    description:
      "A dashboard widget's data: the result of its query, from the widget cache when fresh; refresh: true runs the query now and replaces the cached result.",
    endpoint: dashboardsApi.getWidgetData,
    args: { dashboardId: ['params', 'id'], widgetId: ['params', 'widgetId'] },
    // A boolean here (the REST query parameter is the text "true" or "false").
    own: z.object({
      refresh: z.optional(
        describe(z.boolean(), 'true runs the query now and replaces the cached result (default false)'),
      ),
    }),
    readOnly: true,
    output: () => responseOf(dashboardsApi.getWidgetData),
    run: async (ctx, req) =>
      (await loadWidgets()).widgetData(ctx, req.params.id, req.params.widgetId, {
        refresh: req.own.refresh === true,
      }) as never,
    text: (d) => resultText(d, [d.cached ? `From the widget cache (${d.cachedAt}).` : 'Fresh result.']),
  },
  {
    name: 'submit_for_approval',
    title: 'Submit a query for approval',
    description:
      'Submits one SQL statement (sql: a write, or a read that needs review) for human approval. It never runs now: an approver runs it later (writes only on connections with readOnly false). Answers the pending query; where a rule approves reads automatically, a read is approved and run at once.',
    endpoint: approvalsApi.submitQuery,
    // `sql` as in run_query (the REST body calls it `query`); the former argument name is refused naming it.
    args: { connectionId: ['body', 'connectionId'], sql: ['body', 'query'], context: ['body', 'context'] },
    renamed: { query: 'sql' },
    readOnly: false,
    output: () => responseOf(approvalsApi.submitQuery),
    run: async (ctx, req) => (await loadApprovals()).submitQuery(ctx, req.body) as never,
    text: (d) =>
      recordText('Query submitted for approval', d, [
        'id',
        'status',
        'statementKind',
        'statementType',
        'connectionName',
        'expiresAt',
      ]),
  },
];

export const toolByName = new Map(tools.map((t) => [t.name, t]));
