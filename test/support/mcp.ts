import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TestServer } from './server';

/** The SDK's own client on the local server's MCP endpoint, with `key` as the bearer token (null: none). */
export async function mcpClient(s: TestServer, key: string | null = s.adminKey) {
  const client = new Client({ name: 'loupe-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
    requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} },
  });
  await client.connect(transport);
  return { client, transport };
}

/** tools/call with the result typed as a tool result. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}) {
  return (await client.callTool({ name, arguments: args })) as CallToolResult & {
    structuredContent?: any;
  };
}

/** The text of a tool result's first content block. */
export const textOf = (r: CallToolResult) => (r.content[0] as { text: string }).text;

/** A raw JSON-RPC POST to the endpoint (for what the SDK client never sends). */
export async function mcpPost(
  s: TestServer,
  body: unknown,
  opts: { key?: string | null; headers?: Record<string, string> } = {},
) {
  const key = opts.key === undefined ? s.adminKey : opts.key;
  const res = await fetch(`${s.url}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(opts.headers ?? {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}
