import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import type { AuthContext } from '../../shared/auth/context';
import { authInfoOf, mcpServer } from '../../shared/mcp/server';
import { exchange } from '../../shared/mcp/transport';
import { rateLimited } from '../../shared/platform/errors';

/**
 * The instance transport (shared/mcp/transport.ts) against the SDK's own stateless transport, which it
 * replaces: the same HTTP answers (status, content type, JSON-RPC body) for a table of well-formed and
 * hostile requests, callers kept apart on one server, and one server for every request.
 */
const admin: AuthContext = {
  orgId: 'org-a',
  userId: 'user-a',
  keyId: 'key-a',
  role: 'admin',
  scopes: ['*'],
  connectionIds: [],
};
const queryOnly: AuthContext = {
  ...admin,
  orgId: 'org-b',
  keyId: 'key-b',
  role: 'member',
  scopes: ['query'],
};

const ACCEPT = 'application/json, text/event-stream';
const base = { accept: ACCEPT, 'content-type': 'application/json' };

interface Case {
  name: string;
  body: string | undefined;
  headers?: Record<string, string | undefined>;
}

const init = (id: unknown, protocolVersion = LATEST_PROTOCOL_VERSION) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const list = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
const j = (v: unknown) => JSON.stringify(v);

const CASES: Case[] = [
  { name: 'initialize', body: j(init(1)) },
  { name: 'initialize, old version', body: j(init('a', '2025-03-26')) },
  { name: 'initialize, unknown version', body: j(init(2, '1999-01-01')) },
  { name: 'tools/list', body: j(list(7)) },
  { name: 'ping', body: j({ jsonrpc: '2.0', id: 'p', method: 'ping' }) },
  { name: 'unknown method', body: j({ jsonrpc: '2.0', id: 3, method: 'prompts/list' }) },
  {
    name: 'unknown tool',
    body: j({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'drop_database' } }),
  },
  { name: 'tools/call without params', body: j({ jsonrpc: '2.0', id: 5, method: 'tools/call' }) },
  { name: 'batch', body: j([list(1), { jsonrpc: '2.0', id: 2, method: 'ping' }, list('three')]) },
  {
    name: 'batch with a notification',
    body: j([list(1), { jsonrpc: '2.0', method: 'notifications/initialized' }]),
  },
  { name: 'notification only', body: j({ jsonrpc: '2.0', method: 'notifications/initialized' }) },
  {
    name: 'cancellation only',
    body: j({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
  },
  { name: 'reply only', body: j({ jsonrpc: '2.0', id: 9, result: {} }) },
  { name: 'initialize in a batch', body: j([init(1), list(2)]) },
  { name: 'batch of 101', body: j(Array.from({ length: 101 }, (_, i) => list(i))) },
  {
    name: 'batch of 100',
    body: j(Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))),
  },
  { name: 'empty batch', body: '[]' },
  { name: 'bad JSON', body: '{"jsonrpc": "2.0", "id": 1, "method": ' },
  { name: 'no body', body: undefined },
  { name: 'empty body', body: '' },
  { name: 'JSON null', body: 'null' },
  { name: 'a number', body: '42' },
  { name: 'not JSON-RPC', body: j({ hello: 'world' }) },
  { name: 'wrong jsonrpc version', body: j({ jsonrpc: '1.0', id: 1, method: 'ping' }) },
  { name: 'id of a wrong type', body: j({ jsonrpc: '2.0', id: { x: 1 }, method: 'ping' }) },
  { name: 'method of a wrong type', body: j({ jsonrpc: '2.0', id: 1, method: 5 }) },
  { name: 'batch with one bad message', body: j([list(1), { nope: true }]) },
  { name: 'Accept without event-stream', body: j(list(1)), headers: { accept: 'application/json' } },
  { name: 'Accept without JSON', body: j(list(1)), headers: { accept: 'text/event-stream' } },
  { name: 'no Accept', body: j(list(1)), headers: { accept: undefined } },
  { name: 'text/plain', body: j(list(1)), headers: { 'content-type': 'text/plain' } },
  {
    name: 'JSON named as a parameter of text/plain',
    body: j(list(1)),
    headers: { 'content-type': 'text/plain; a=application/json' },
  },
  {
    name: 'JSON with charset',
    body: j(list(1)),
    headers: { 'content-type': 'application/json; charset=utf-8' },
  },
  { name: 'Content-Type in capitals', body: j(list(1)), headers: { 'Content-Type': 'APPLICATION/JSON' } },
  { name: 'no Content-Type', body: j(list(1)), headers: { 'content-type': undefined } },
  { name: 'supported version header', body: j(list(1)), headers: { 'mcp-protocol-version': '2025-03-26' } },
  { name: 'unsupported version header', body: j(list(1)), headers: { 'mcp-protocol-version': '1999-01-01' } },
  { name: 'empty version header', body: j(list(1)), headers: { 'mcp-protocol-version': '' } },
  {
    name: 'initialize with an unsupported version header',
    body: j(init(1)),
    headers: { 'mcp-protocol-version': '1999-01-01' },
  },
];

const headersOf = (c: Case) => {
  const h: Record<string, string | undefined> = { ...base };
  for (const [k, v] of Object.entries(c.headers ?? {})) {
    for (const existing of Object.keys(h)) if (existing.toLowerCase() === k.toLowerCase()) delete h[existing];
    h[k] = v;
  }
  return h;
};

const parsedOf = (body: string | undefined) => {
  try {
    return body === undefined ? undefined : JSON.parse(body);
  } catch {
    return undefined;
  }
};

/** What the endpoint answered before: a new SDK Server and stateless transport for the request. */
async function viaSdk(c: Case, ctx: AuthContext) {
  const server = mcpServer();
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(headersOf(c))) if (v !== undefined) headers.set(k, v);
    const parsed = parsedOf(c.body);
    const response = await transport.handleRequest(
      new Request('http://localhost/v1/mcp', { method: 'POST', headers, body: c.body }),
      {
        ...(parsed === undefined ? {} : { parsedBody: parsed }),
        authInfo: authInfoOf({ ctx, limited: undefined }),
      },
    );
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      text: await response.text(),
    };
  } finally {
    await server.close();
  }
}

async function viaInstance(c: Case, ctx: AuthContext) {
  const a = await exchange({
    url: 'http://localhost/v1/mcp',
    method: 'POST',
    headers: headersOf(c),
    body: c.body,
    parsed: parsedOf(c.body),
    ctx,
  });
  return { status: a.status, type: a.headers['content-type'] ?? null, text: a.body };
}

const bodyOf = (text: string) => (text ? JSON.parse(text) : text);

describe('MCP instance transport', () => {
  it.each(CASES)('answers as the SDK transport did: $name', async (c) => {
    for (const ctx of [admin, queryOnly]) {
      const [sdk, ours] = [await viaSdk(c, ctx), await viaInstance(c, ctx)];
      expect(ours.status).toBe(sdk.status);
      expect(ours.type).toBe(sdk.type);
      expect(bodyOf(ours.text)).toEqual(bodyOf(sdk.text));
    }
  });

  it('builds one SDK Server for every request of the instance', async () => {
    const connect = vi.spyOn(Server.prototype, 'connect');
    try {
      for (let i = 0; i < 20; i++) expect((await viaInstance(CASES[3], admin)).status).toBe(200);
      expect(connect).not.toHaveBeenCalled();
    } finally {
      connect.mockRestore();
    }
  });

  it('keeps concurrent callers apart although they use the same request ids', async () => {
    const callers = Array.from({ length: 40 }, (_, i) => (i % 2 ? admin : queryOnly));
    const answers = await Promise.all(
      callers.map((ctx) => viaInstance({ name: 'same ids', body: j([list(1), list(2)]) }, ctx)),
    );
    answers.forEach((a, i) => {
      const [one, two] = bodyOf(a.text);
      expect([one.id, two.id]).toEqual([1, 2]);
      // tools/list is the caller's own: a key with only the query scope sees run_query and no list of connections.
      const names = one.result.tools.map((t: { name: string }) => t.name);
      expect(names.includes('list_connections')).toBe(callers[i] === admin);
      expect(names).toContain('run_query');
      expect(two.result).toEqual(one.result);
    });
  });

  it("one caller's cancellation never reaches the server (it could name another caller's call)", async () => {
    const oncancel = vi.spyOn(Protocol.prototype as unknown as { _oncancel: () => void }, '_oncancel');
    try {
      const cancels = Array.from({ length: 10 }, (_, i) => ({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: `loupe-${i}` },
      }));
      expect((await viaInstance({ name: 'cancels', body: j(cancels) }, queryOnly)).status).toBe(202);
      const mixed = await viaInstance({ name: 'cancel in a batch', body: j([list(1), ...cancels]) }, admin);
      expect(bodyOf(mixed.text).result.tools.length).toBeGreaterThan(0);
      expect(oncancel).not.toHaveBeenCalled();
      // A tool call refused by the rate limit still answers as a result, with the caller's id.
      const limited = await exchange({
        url: 'http://localhost/v1/mcp',
        method: 'POST',
        headers: base,
        body: undefined,
        parsed: {
          jsonrpc: '2.0',
          id: 'x',
          method: 'tools/call',
          params: { name: 'run_query', arguments: {} },
        },
        ctx: admin,
        limited: rateLimited(30, {}),
      });
      const reply = bodyOf(limited.body);
      expect(reply.id).toBe('x');
      expect(reply.result.structuredContent.error.code).toBe('RATE_LIMITED');
    } finally {
      oncancel.mockRestore();
    }
  });
});
