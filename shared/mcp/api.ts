import { endpoint } from '../http/endpoint';

/**
 * The MCP endpoint (Streamable HTTP, stateless): POST only; a GET (a server-to-client stream) and a DELETE
 * (ending a session) answer 405, as the transport allows a server without sessions to. Any valid key may
 * connect: each tool then requires its REST operation's scope.
 */
export const mcpEndpoint = endpoint({
  method: 'POST',
  path: '/mcp',
  tag: 'MCP',
  summary: 'Model Context Protocol endpoint (Streamable HTTP, JSON-RPC 2.0)',
});
