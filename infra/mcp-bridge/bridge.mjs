#!/usr/bin/env node
import { realpathSync } from 'node:fs';
// loupe-mcp: a stdio MCP server for clients that speak only stdio, forwarding every JSON-RPC message to a
// Loupe MCP endpoint (Streamable HTTP, bearer key) and every answer back, unchanged. Dependency-free (Node
// 18 or later: fetch), so `npx -y <loupe>/loupe-mcp.tgz` runs it without a checkout; the same file is
// `npm run -s loupe -- mcp` in a checkout. See docs/guides/mcp.md.
//
//   loupe-mcp --url http://localhost:3000/v1 --key lp_...      (or LOUPE_URL and LOUPE_API_KEY)
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const USAGE = `loupe-mcp: a stdio MCP server forwarding to a Loupe MCP endpoint

  loupe-mcp --url BASE_URL --key API_KEY
  LOUPE_URL=BASE_URL LOUPE_API_KEY=API_KEY loupe-mcp

BASE_URL is the API's base (http://localhost:3000/v1, or the deployed .../v1); /mcp is added unless it
ends with it. The environment keeps the key out of the process list; a flag wins over the environment.
`;

/** The MCP endpoint of a Loupe base URL (`http://localhost:3000/v1`), or the endpoint itself when given. */
export function mcpUrl(base) {
  const url = new URL(base);
  if (!/\/mcp\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/mcp`;
  return url;
}

/** The JSON-RPC messages of a text/event-stream body (`data:` lines of each event). */
export function sseMessages(text) {
  const out = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data) out.push(JSON.parse(data));
  }
  return out;
}

/** Why an HTTP answer carried no JSON-RPC message: the REST error envelope's message, or the status. */
function httpFailure(status, text) {
  try {
    const e = JSON.parse(text)?.error;
    if (e?.message) return `HTTP ${status} ${e.code ?? ''}: ${e.message}`.replace(' :', ':');
  } catch {
    // not JSON
  }
  return `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`;
}

/**
 * Forwards messages read from `input` (one JSON-RPC message per line, the MCP stdio framing) to the
 * endpoint, writing each answer to `write` as one line. Requests run concurrently; a request whose HTTP
 * call fails gets a JSON-RPC error with its id (the client never hangs). Resolves when input ends and
 * every forward has finished.
 */
export async function runBridge({
  url,
  key,
  input = process.stdin,
  write = (line) => process.stdout.write(line),
  log = (m) => process.stderr.write(`loupe-mcp: ${m}\n`),
}) {
  const endpoint = mcpUrl(url);
  let protocolVersion;
  let sessionId;
  const pending = new Set();
  const send = (message) => write(`${JSON.stringify(message)}\n`);

  async function forward(message) {
    const isRequest = message && typeof message === 'object' && 'method' in message && 'id' in message;
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${key}`,
    };
    if (protocolVersion) headers['mcp-protocol-version'] = protocolVersion;
    if (sessionId) headers['mcp-session-id'] = sessionId;
    try {
      const res = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(message) });
      sessionId = res.headers.get('mcp-session-id') ?? sessionId;
      const text = await res.text();
      const type = res.headers.get('content-type') ?? '';
      let answers = [];
      if (res.status === 202 || !text) answers = [];
      else if (type.includes('text/event-stream')) answers = sseMessages(text);
      else {
        const body = JSON.parse(text);
        answers = Array.isArray(body) ? body : [body];
      }
      const rpc = answers.filter((a) => a && a.jsonrpc === '2.0');
      if (!res.ok && !rpc.length) throw new Error(httpFailure(res.status, text));
      for (const a of rpc) {
        // The negotiated revision goes on every later request (MCP-Protocol-Version).
        if (isRequest && message.method === 'initialize' && a.id === message.id && a.result?.protocolVersion)
          protocolVersion = a.result.protocolVersion;
        send(a);
      }
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      if (isRequest) send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: reason } });
      else log(reason);
    }
  }

  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      continue;
    }
    const p = forward(message).finally(() => pending.delete(p));
    pending.add(p);
  }
  await Promise.all(pending);
}

/** Reads --url/--key (or LOUPE_URL/LOUPE_API_KEY); answers the options, or a message for a bad call. */
export function options(argv, env = process.env) {
  const { values } = parseArgs({
    args: argv,
    options: { url: { type: 'string' }, key: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: false,
  });
  if (values.help) return { help: true };
  const url = values.url ?? env.LOUPE_URL;
  const key = values.key ?? env.LOUPE_API_KEY;
  if (!url || !key) return { error: 'loupe-mcp needs --url (or LOUPE_URL) and --key (or LOUPE_API_KEY).' };
  if (!URL.canParse(url)) return { error: `Not a URL: ${url}` };
  return { url, key };
}

export async function main(argv = process.argv.slice(2)) {
  let o;
  try {
    o = options(argv);
  } catch (e) {
    o = { error: e.message };
  }
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (o.error) {
    process.stderr.write(`${o.error}\n\n${USAGE}`);
    return 2;
  }
  await runBridge(o);
  return 0;
}

const self = (() => {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
if (self)
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`loupe-mcp: ${e?.message ?? e}\n`);
      process.exitCode = 1;
    },
  );
