import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { AuthContext } from '../auth/context';
import type { AppError } from '../platform/errors';
import { mcpServer } from './server';

export interface McpExchange {
  url: string;
  method: string;
  headers: Record<string, string | undefined>;
  /** The raw body. */
  body: string | undefined;
  /** The body already parsed, when it is JSON (otherwise the SDK answers the JSON-RPC parse error). */
  parsed?: unknown;
  ctx: AuthContext;
  limited?: AppError;
}

export interface McpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// Set by the HTTP server or Lambda, never forwarded into the Web Request.
const HOP_BY_HOP = new Set([
  'host',
  'content-length',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'expect',
]);

/**
 * One MCP Streamable HTTP exchange in stateless mode (no session id; every request stands alone, which
 * suits Lambda) with JSON responses instead of an SSE stream (API Gateway buffers the answer anyway):
 * the SDK's transport checks the headers, negotiates the protocol version, parses JSON-RPC and answers
 * through the SDK's Server.
 */
export async function exchange(x: McpExchange): Promise<McpAnswer> {
  const server = mcpServer(x.ctx, x.limited);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(x.headers))
      if (v !== undefined && !HOP_BY_HOP.has(k.toLowerCase()))
        try {
          headers.set(k, v);
        } catch {
          // A name or value the Fetch API refuses: the transport never reads such a header.
        }
    const hasBody = x.method !== 'GET' && x.method !== 'HEAD' && x.body !== undefined;
    const request = new Request(x.url, { method: x.method, headers, body: hasBody ? x.body : undefined });
    const response = await transport.handleRequest(
      request,
      x.parsed === undefined ? undefined : { parsedBody: x.parsed },
    );
    const out: Record<string, string> = {};
    response.headers.forEach((v, k) => {
      out[k] = v;
    });
    return { status: response.status, headers: out, body: await response.text() };
  } finally {
    await server.close();
  }
}
