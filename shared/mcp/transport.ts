import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCResultResponse,
  type MessageExtraInfo,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { AuthContext } from '../auth/context';
import type { AppError } from '../platform/errors';
import { authInfoOf, mcpServer } from './server';

export interface McpExchange {
  url: string;
  method: string;
  headers: Record<string, string | undefined>;
  /** The raw body. */
  body: string | undefined;
  /** The body already parsed, when it is JSON (otherwise the JSON-RPC parse error is answered). */
  parsed?: unknown;
  ctx: AuthContext;
  limited?: AppError;
}

export interface McpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

type Reply = JSONRPCResultResponse | JSONRPCErrorResponse;

// Kinds of message, told apart by their members. Only for messages already checked: the callers' by
// JSONRPCMessageSchema (a union of four strict schemas: a request has `method` and `id`, a notification
// `method` and no `id`, a reply `result` or `error`), the server's own replies by the SDK. The SDK's
// guards (isJSONRPCRequest, …) parse the message with zod again, the result's content included.
const isRequest = (m: JSONRPCMessage) => 'method' in m && 'id' in m;
const isNotification = (m: JSONRPCMessage) => 'method' in m && !('id' in m);
const isReply = (m: JSONRPCMessage): m is Reply => 'result' in m || 'error' in m;

/**
 * The transport of this instance's one SDK Server. Every HTTP exchange hands its messages to the server
 * through it: each request gets an id unique in this instance (so that callers sending the same ids never
 * meet) and its reply comes back to the exchange that waits for it, with the caller's id restored. The
 * caller's context rides with each message as its AuthInfo (server.ts). Nothing is built per request.
 */
class InstanceTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private next = 0;
  private readonly waiting = new Map<RequestId, (reply: Reply) => void>();

  async start(): Promise<void> {}
  async close(): Promise<void> {}

  /**
   * Replies go to the exchange waiting for them. The server's notifications and requests to the client
   * have nowhere to go in stateless JSON mode (no SSE stream), as with the SDK's own transport: dropped.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!isReply(message) || message.id === undefined) return;
    const deliver = this.waiting.get(message.id);
    if (!deliver) return;
    this.waiting.delete(message.id);
    deliver(message);
  }

  /** Hands one caller's requests (and notifications) to the server; resolves with the replies in order. */
  dispatch(messages: JSONRPCMessage[], extra: MessageExtraInfo): Promise<Reply[]> {
    const replies: Promise<Reply>[] = [];
    for (const message of messages) {
      if (isRequest(message)) {
        const id = `loupe-${++this.next}`;
        const original = message.id;
        replies.push(
          new Promise<Reply>((resolve) => {
            this.waiting.set(id, (reply) => resolve({ ...reply, id: original } as Reply));
          }),
        );
        this.onmessage?.({ ...message, id }, extra);
      } else if (forwarded(message)) this.onmessage?.(message, extra);
    }
    return Promise.all(replies);
  }
}

/**
 * Notifications reach the server; a cancellation does not (the request id it names could be another
 * caller's call in this instance's numbering: one caller must never cancel another's), nor do the
 * client's replies (this server sends no requests, so they answer nothing).
 */
const forwarded = (m: JSONRPCMessage) =>
  isNotification(m) && (m as { method: string }).method !== 'notifications/cancelled';

let instance: Promise<{ server: Server; transport: InstanceTransport }> | undefined;

/** This instance's server and transport, built and connected on the first exchange. */
function serverOfInstance() {
  instance ??= (async () => {
    const server = mcpServer();
    const transport = new InstanceTransport();
    await server.connect(transport);
    return { server, transport };
  })();
  instance.catch(() => {
    instance = undefined;
  });
  return instance;
}

const json = (status: number, body: unknown): McpAnswer => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** A JSON-RPC error without an id, as the SDK's transport answers an HTTP-level refusal. */
const httpError = (status: number, code: number, message: string, data?: unknown): McpAnswer =>
  json(status, {
    jsonrpc: '2.0',
    error: { code, message, ...(data !== undefined ? { data } : {}) },
    id: null,
  });

function header(headers: Record<string, string | undefined>, name: string): string | undefined {
  for (const k in headers) if (k.length === name.length && k.toLowerCase() === name) return headers[k];
  return undefined;
}

/**
 * One MCP Streamable HTTP exchange in stateless mode (no session id; every request stands alone, which
 * suits Lambda) with JSON responses instead of an SSE stream (API Gateway buffers the answer anyway).
 * The HTTP rules are those of the SDK's WebStandardStreamableHTTPServerTransport in that mode, status,
 * code and message alike (406 without both media types in Accept, 415 for a body that is not JSON, 400
 * for invalid JSON or JSON-RPC, a batch over 100 messages, an initialize in a batch or an unsupported
 * MCP-Protocol-Version, 202 for notifications only; test/unit/mcp-transport.test.ts compares the two);
 * the messages go to this instance's one SDK Server. The SDK's stateless transport serves one request
 * and must be rebuilt, with a server, for the next: that cost 1.1–1.5 ms of CPU per request (and an
 * McpError constructed at every close).
 */
export async function exchange(x: McpExchange): Promise<McpAnswer> {
  if (x.method !== 'POST') return httpError(405, -32000, 'Method not allowed.');
  try {
    const accept = header(x.headers, 'accept');
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream'))
      return httpError(
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
    if (!isJsonContentType(header(x.headers, 'content-type')))
      return httpError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    const raw = x.parsed;
    if (raw === undefined) return httpError(400, -32700, 'Parse error: Invalid JSON');
    if (Array.isArray(raw) && raw.length > MAX_BATCH_SIZE)
      return httpError(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(raw) ? raw : [raw]).map((m) => JSONRPCMessageSchema.parse(m));
    } catch {
      return httpError(400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    // (the method first: the SDK's check is a zod parse of each message)
    if (messages.some((m) => (m as { method?: unknown }).method === 'initialize' && isInitializeRequest(m))) {
      if (messages.length > 1)
        return httpError(400, -32600, 'Invalid Request: Only one initialization request is allowed');
    } else {
      const version = header(x.headers, 'mcp-protocol-version');
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
        return httpError(
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
        );
    }
    const { transport } = await serverOfInstance();
    const extra: MessageExtraInfo = { authInfo: authInfoOf({ ctx: x.ctx, limited: x.limited }) };
    if (!messages.some(isRequest)) {
      transport.dispatch(messages, extra);
      return { status: 202, headers: {}, body: '' };
    }
    const replies = await transport.dispatch(messages, extra);
    return json(200, replies.length === 1 ? replies[0] : replies);
  } catch (error) {
    return httpError(400, -32700, 'Parse error', String(error));
  }
}
