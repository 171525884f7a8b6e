import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The MCP endpoint of a Loupe base URL (`http://localhost:3000/v1`), or the endpoint itself when given. */
export function mcpUrl(base: string): URL {
  const url = new URL(base);
  if (!/\/mcp\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/mcp`;
  return url;
}

/**
 * `npm run -s loupe -- mcp --url <base> --key <key>`: a stdio MCP server for clients that speak only
 * stdio, forwarding every JSON-RPC message to the hosted endpoint (Streamable HTTP, bearer key) and every
 * answer back, unchanged. The SDK's transports on both sides; nothing is interpreted but the negotiated
 * protocol version (sent on later requests) and a failed forward, answered as a JSON-RPC error.
 */
export async function runBridge(base: string, key: string): Promise<void> {
  const remote = new StreamableHTTPClientTransport(mcpUrl(base), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const local = new StdioServerTransport();
  const initializeIds = new Set<string | number>();

  remote.onmessage = (m: JSONRPCMessage) => {
    const result = (m as { id?: string | number; result?: { protocolVersion?: unknown } }).result;
    const id = (m as { id?: string | number }).id;
    if (id !== undefined && initializeIds.delete(id) && typeof result?.protocolVersion === 'string')
      remote.setProtocolVersion(result.protocolVersion);
    void local.send(m);
  };
  remote.onerror = (e) => process.stderr.write(`loupe mcp: ${e.message}\n`);
  local.onmessage = (m: JSONRPCMessage) => {
    if (isJSONRPCRequest(m) && m.method === 'initialize') initializeIds.add(m.id);
    remote.send(m).catch((e: Error) => {
      if (isJSONRPCRequest(m))
        void local.send({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: e.message } });
      else process.stderr.write(`loupe mcp: ${e.message}\n`);
    });
  };
  const closed = new Promise<void>((resolve) => {
    local.onclose = () => resolve();
  });
  await remote.start();
  await local.start();
  process.stdin.once('end', () => void local.close());
  await closed;
  await remote.close();
}
