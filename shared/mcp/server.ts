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
import { callTool, visibleTools } from './call';
import { toolByName } from './tools';

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

/**
 * One MCP server for one request of one caller (stateless: every HTTP request builds its own). Tools and
 * resources call the REST use cases with the caller's context; `limited` is the organization's rate-limit
 * refusal of this request, which a tool call reports as its result.
 */
export function mcpServer(ctx: AuthContext, limited: AppError | undefined): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: noElicitation,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: visibleTools(ctx) }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const def = toolByName.get(req.params.name);
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    return callTool(ctx, def, req.params.arguments, limited);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async (req) => {
    if (!hasScope(ctx, 'connections')) return { resources: [] };
    const cursor = req.params?.cursor;
    const page = cursor === undefined ? 1 : Number(cursor);
    if (!Number.isInteger(page) || page < 1 || page > 1_000_000)
      throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor.');
    const { listConnections } = await import('../connections/connections');
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
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: hasScope(ctx, 'connections')
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
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
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
      const data = await (await import('../connections/schema')).getSchema(ctx, id);
      return {
        contents: [{ uri: req.params.uri, mimeType: 'application/json', text: JSON.stringify(data) }],
      };
    } catch (e) {
      return protocolError(e);
    }
  });
  return server;
}
