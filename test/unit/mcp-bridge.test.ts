import { createServer, type Server } from 'node:http';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpUrl, options, runBridge, sseMessages } from '../../infra/mcp-bridge/bridge.mjs';

/**
 * The dependency-free stdio bridge (infra/mcp-bridge/bridge.mjs, the loupe-mcp package) against a small
 * HTTP server that answers as Streamable HTTP servers may: JSON, an event stream, 202 for a notification,
 * and the REST 401 envelope. The end-to-end run against Loupe is in test/integration/mcp.test.ts.
 */
let server: Server;
let url: string;
const seen: Array<{ headers: Record<string, unknown>; body: any }> = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw);
      seen.push({ headers: req.headers, body });
      if (req.headers.authorization !== 'Bearer good') {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ data: null, error: { code: 'UNAUTHORIZED', message: 'Invalid API key.' } }),
        );
      }
      if (!('id' in body)) return res.writeHead(202).end();
      if (body.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(
          JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-06-18' } }),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { echo: body.method } })}\n\n`,
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function bridge(key: string, lines: string[]) {
  const input = new PassThrough();
  const out: string[] = [];
  const logged: string[] = [];
  const done = runBridge({ url, key, input, write: (l) => out.push(l), log: (m) => logged.push(m) });
  for (const l of lines) input.write(`${l}\n`);
  input.end();
  await done;
  return { out: out.map((l) => JSON.parse(l)), logged };
}

describe('the stdio bridge', () => {
  it('forwards each line, answers JSON and event streams, and sends the negotiated version afterwards', async () => {
    seen.length = 0;
    const input = new PassThrough();
    const out: any[] = [];
    let answered: () => void = () => {};
    const done = runBridge({
      url,
      key: 'good',
      input,
      write: (l) => {
        out.push(JSON.parse(l));
        answered();
      },
    });
    // As a client does: initialize, wait for its answer, then the next request.
    const first = new Promise<void>((r) => {
      answered = r;
    });
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })}\n`);
    await first;
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    input.end();
    await done;
    expect(out).toEqual([
      { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18' } },
      { jsonrpc: '2.0', id: 2, result: { echo: 'tools/list' } },
    ]);
    expect(seen[0].headers).toMatchObject({
      authorization: 'Bearer good',
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    });
    expect(seen[0].headers['mcp-protocol-version']).toBeUndefined();
    expect(seen[1].headers['mcp-protocol-version']).toBe('2025-06-18');
  });

  it('a notification gets no answer; a request answered as an event stream gets its message', async () => {
    seen.length = 0;
    const input = [
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      '',
      'not json',
    ];
    const { out } = await bridge('good', input);
    expect(out).toContainEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    expect(out.filter((m) => m.id === 1)).toHaveLength(1);
    expect(seen).toHaveLength(2);
    const list = await bridge('good', [JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'tools/list' })]);
    expect(list.out).toEqual([{ jsonrpc: '2.0', id: 'x', result: { echo: 'tools/list' } }]);
  });

  it('an HTTP refusal is a JSON-RPC error for the request (never a hang), with the REST message', async () => {
    const { out } = await bridge('bad', [JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' })]);
    expect(out).toEqual([
      { jsonrpc: '2.0', id: 7, error: { code: -32000, message: 'HTTP 401 UNAUTHORIZED: Invalid API key.' } },
    ]);
    const note = await bridge('bad', [
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    ]);
    expect(note.out).toEqual([]);
    expect(note.logged).toEqual(['HTTP 401 UNAUTHORIZED: Invalid API key.']);
  });

  it('reads the URL and key from flags or the environment, and finds the endpoint', () => {
    expect(options(['--url', 'http://h/v1', '--key', 'k'], {})).toEqual({ url: 'http://h/v1', key: 'k' });
    expect(options([], { LOUPE_URL: 'http://h/v1', LOUPE_API_KEY: 'k' })).toEqual({
      url: 'http://h/v1',
      key: 'k',
    });
    expect(options(['--key', 'flag'], { LOUPE_URL: 'http://h/v1', LOUPE_API_KEY: 'env' }).key).toBe('flag');
    expect(options([], {}).error).toMatch(/needs --url/);
    expect(options(['--url', 'nope', '--key', 'k'], {}).error).toBe('Not a URL: nope');
    expect(() => options(['--', 'mcp'], {})).toThrow();
    expect(mcpUrl('http://localhost:3000/v1').href).toBe('http://localhost:3000/v1/mcp');
    expect(mcpUrl('http://localhost:3000/v1/').href).toBe('http://localhost:3000/v1/mcp');
    expect(mcpUrl('https://x.example/v1/mcp').href).toBe('https://x.example/v1/mcp');
    expect(sseMessages('event: message\ndata: {"a":1}\n\n: comment\n\ndata: {"b":\ndata: 2}\n\n')).toEqual([
      { a: 1 },
      { b: 2 },
    ]);
  });
});
