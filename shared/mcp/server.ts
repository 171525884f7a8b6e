import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { hasScope } from '../auth/authenticate';
import type { AuthContext } from '../auth/context';
import { type AppError, forbidden, isAppError } from '../platform/errors';
import { lazy } from '../platform/lazy';
import { callTool, visibleTools } from './call';
import { toolByName } from './tools';

// Loaded on first use and kept (platform/lazy.ts).
const loadConnections = lazy(() => import('../connections/connections'));
const loadSchema = lazy(() => import('../connections/schema'));

export const SERVER_INFO = { name: 'loupe', title: 'Loupe', version: '1.0.0' };

const INSTRUCTIONS =
  'Loupe gives read-only access to SQL and MongoDB databases. Start with list_connections, then ' +
  'search_schema (or read the loupe://connections/{id}/schema resource) before writing SQL for run_query. ' +
  'Writes are never run directly: submit_for_approval queues them for a human approver.';

const SCHEMA_URI = /^loupe:\/\/connections\/([^/?#]{1,200})\/schema$/;
const schemaUri = (id: string) => `loupe://connections/${encodeURIComponent(id)}/schema`;

/**
 * The SDK's server validates JSON Schema only for elicitation (asking the user for input), which Loupe
 * never sends; the bundle leaves Ajv out (infra/bundling.ts, sdkWithoutAjv).
 */
const noElicitation: jsonSchemaValidator = {
  getValidator: () => {
    throw new McpError(ErrorCode.InternalError, 'Loupe sends no elicitation requests.');
  },
};

/** A REST error outside a tool call (resources): a JSON-RPC error carrying the REST code. */
function protocolError(e: unknown): never {
  if (e instanceof McpError || !isAppError(e)) throw e;
  const code =
    e.code === 'NOT_FOUND'
      ? -32002 // MCP's "resource not found"
      : e.status === 400
        ? ErrorCode.InvalidParams
        : ErrorCode.InvalidRequest;
  throw new McpError(code, `${e.code}: ${e.message}`, { code: e.code, message: e.message });
}

const needConnectionsScope = (ctx: AuthContext) => {
  if (!hasScope(ctx, 'connections'))
    throw forbidden('This API key lacks the "connections" scope required for this operation.');
};

/** Who a message comes from: the caller of the HTTP request that carried it (transport.ts sets it). */
export interface McpCaller {
  ctx: AuthContext;
  /** The organization's rate-limit refusal of this request, which a tool call reports as its result. */
  limited: AppError | undefined;
}

/** The AuthInfo the transport passes with each message: the caller rides in `extra` (never the key). */
export const authInfoOf = (caller: McpCaller): AuthInfo => ({
  token: '',
  clientId: caller.ctx.keyId,
  scopes: caller.ctx.scopes,
  extra: { caller },
});

function callerOf(extra: { authInfo?: AuthInfo }): McpCaller {
  const caller = extra.authInfo?.extra?.caller as McpCaller | undefined;
  // Every message reaches the server through exchange(), which always sets it.
  if (!caller) throw new McpError(ErrorCode.InternalError, 'A message without its caller.');
  return caller;
}

/**
 * The MCP server of this instance (built once, see transport.ts): one SDK Server for every request and
 * caller. It holds no caller's state: each handler takes the caller from the message's AuthInfo, and
 * tools and resources call the REST use cases with that caller's context.
 */
export function mcpServer(): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: noElicitation,
  });
  server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => ({
    tools: visibleTools(callerOf(extra).ctx),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const { ctx, limited } = callerOf(extra);
    const def = toolByName.get(req.params.name);
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    return callTool(ctx, def, req.params.arguments, limited);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async (req, extra) => {
    const { ctx } = callerOf(extra);
    if (!hasScope(ctx, 'connections')) return { resources: [] };
    const cursor = req.params?.cursor;
    const page = cursor === undefined ? 1 : Number(cursor);
    if (!Number.isInteger(page) || page < 1 || page > 1_000_000)
      throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor.');
    const { listConnections } = await loadConnections();
    const r = await listConnections(ctx, { page, pageSize: 100 });
    return {
      resources: r.data.map((c) => ({
        uri: schemaUri(c.id),
        name: `${c.name} schema`,
        title: `Schema of ${c.name} (${c.type})`,
        description: `Tables, columns, keys and the summary of connection ${c.name} (${c.type}, ${c.database}).`,
        mimeType: 'application/json',
      })),
      ...(page < r.pagination.totalPages ? { nextCursor: String(page + 1) } : {}),
    };
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (_req, extra) => ({
    resourceTemplates: hasScope(callerOf(extra).ctx, 'connections')
      ? [
          {
            uriTemplate: 'loupe://connections/{id}/schema',
            name: 'Connection schema',
            description: 'The cached schema of a connection (GET /connections/{id}/schema).',
            mimeType: 'application/json',
          },
        ]
      : [],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    const { ctx } = callerOf(extra);
    const m = SCHEMA_URI.exec(req.params.uri);
    if (!m) throw new McpError(-32002, `Resource not found: ${req.params.uri}`);
    try {
      needConnectionsScope(ctx);
      let id: string;
      try {
        id = decodeURIComponent(m[1]);
      } catch {
        throw new McpError(-32002, `Resource not found: ${req.params.uri}`);
      }
      const data = await (await loadSchema()).getSchema(ctx, id);
      return {
        contents: [{ uri: req.params.uri, mimeType: 'application/json', text: JSON.stringify(data) }],
      };
    } catch (e) {
      return protocolError(e);
    }
  });
  return server;
}
