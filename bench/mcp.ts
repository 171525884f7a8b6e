import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { LocalApp } from '../infra/local/app';
import type { AuthContext } from '../shared/auth/context';
import { generateKey } from '../shared/auth/key-material';
import { closeAllDrivers } from '../shared/databases/drivers/index';
import { authInfoOf, mcpServer } from '../shared/mcp/server';
import { exchange } from '../shared/mcp/transport';
import { documentClient } from '../shared/platform/db/client';
import { rateLimited } from '../shared/platform/errors';
import { startPostgres } from '../test/support/databases';
import { type BenchModule, median, ms } from './context';

const cpuMs = (n: number) => `${n.toFixed(2)} ms`;

import { type apiClient, LOCAL_RUNTIME_ENV, snapshotEnv, startWithPostgres } from './query';

/** Target (issue 25): run_query `SELECT 1` through MCP adds at most 2 ms (median) to the same REST call. */
export const MCP_ADDED_TARGET_MS = 2;
/** Target (issue 33): MCP CPU per call at most REST's + 0.5 ms (this process: client, runtime, store). */
export const MCP_CPU_ADDED_TARGET_MS = 0.5;
const WARMUP = 30;
const ITERATIONS = 200;
/** CPU is measured over CPU_BLOCKS pairs of blocks of this many calls, one block of each kind per pair. */
const CPU_BLOCK = 50;
const CPU_BLOCKS = 30;
const WIRING_BLOCK = 500;
const WIRING_BLOCKS = 6;

const CALLER: AuthContext = {
  orgId: 'bench-org',
  userId: 'bench-user',
  keyId: 'bench-key',
  role: 'admin',
  scopes: ['*'],
  connectionIds: [],
};
const WIRING_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

/**
 * The MCP wiring alone, in this process: one tools/call of run_query that the rate limit refuses (so no
 * store call and no database: the transport's checks, JSON-RPC validation, the SDK server's dispatch,
 * the tool-result envelope). `perRequest` is what the endpoint did before issue 33 (a new SDK Server and
 * stateless transport for every request, closed after it), `perInstance` what it does now.
 */
function wiring() {
  const limited = rateLimited(30, {});
  let n = 0;
  const message = () => ({
    jsonrpc: '2.0',
    id: ++n,
    method: 'tools/call',
    params: { name: 'run_query', arguments: { connectionId: 'c', sql: 'SELECT 1' } },
  });
  const check = (text: string) => {
    if (!text.includes('RATE_LIMITED')) throw new Error(`MCP wiring answered ${text.slice(0, 300)}`);
  };
  return {
    async perRequest() {
      const server = mcpServer();
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      try {
        const body = message();
        const response = await transport.handleRequest(
          new Request('http://localhost/v1/mcp', {
            method: 'POST',
            headers: new Headers(WIRING_HEADERS),
            body: JSON.stringify(body),
          }),
          { parsedBody: body, authInfo: authInfoOf({ ctx: CALLER, limited }) },
        );
        check(await response.text());
      } finally {
        await server.close();
      }
    },
    async perInstance() {
      const body = message();
      const a = await exchange({
        url: 'http://localhost/v1/mcp',
        method: 'POST',
        headers: WIRING_HEADERS,
        body: JSON.stringify(body),
        parsed: body,
        ctx: CALLER,
        limited,
      });
      check(a.body);
    },
  };
}

/** Store calls of one organization (its items and the key lookups; the local pollers' are left out). */
function storeCallCounter(orgId: string) {
  const client = documentClient();
  const original = client.send;
  let calls = 0;
  client.send = (operation, input) => {
    const i = input as {
      Key?: { pk?: string };
      Item?: { pk?: string };
      ExpressionAttributeValues?: Record<string, unknown>;
    };
    const pk = String(i.Key?.pk ?? i.Item?.pk ?? i.ExpressionAttributeValues?.[':pk'] ?? '');
    if (pk.startsWith('KEYHASH#') || pk.startsWith(`ORG#${orgId}`)) calls += 1;
    return original.call(client, operation, input);
  };
  return {
    take: () => {
      const n = calls;
      calls = 0;
      return n;
    },
    stop: () => {
      client.send = original;
    },
  };
}

/** CPU of this process (all its threads: HTTP client, the local runtime and its store) per call, in ms. */
async function cpuPerCall(call: () => Promise<unknown>, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) await call();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / n;
}

const p95 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)];
};

const MCP_HEADERS = {
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

export const mcp: BenchModule = {
  name: 'mcp',
  description:
    'MCP overhead: tools/call run_query `SELECT 1` on POST /v1/mcp vs POST /v1/connections/{id}/query, same local runtime, same keep-alive socket, interleaved runs',
  async run() {
    const database = await startPostgres();
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-mcp-'));
    const adminKey = generateKey();
    const restoreEnv = snapshotEnv(LOCAL_RUNTIME_ENV);
    let app: LocalApp | undefined;
    let api: ReturnType<typeof apiClient> | undefined;
    try {
      let id: string;
      ({ app, api, id } = await startWithPostgres(dataDir, adminKey, database));
      const client = api;

      const viaRest = async () => {
        const started = performance.now();
        const r = await client.call('POST', `/connections/${id}/query`, { sql: 'SELECT 1', maxRows: 1 });
        const took = performance.now() - started;
        if (r.status !== 200) throw new Error(`REST query answered ${r.status}: ${r.text.slice(0, 500)}`);
        return { took, text: r.text };
      };
      let callId = 0;
      const viaMcp = async () => {
        const started = performance.now();
        const r = await client.call(
          'POST',
          '/mcp',
          {
            jsonrpc: '2.0',
            id: ++callId,
            method: 'tools/call',
            params: { name: 'run_query', arguments: { connectionId: id, sql: 'SELECT 1', maxRows: 1 } },
          },
          MCP_HEADERS,
        );
        const took = performance.now() - started;
        if (r.status !== 200) throw new Error(`MCP call answered ${r.status}: ${r.text.slice(0, 500)}`);
        return { took, text: r.text };
      };

      for (let i = 0; i < WARMUP; i++) {
        const [a, b] = [await viaRest(), await viaMcp()];
        if (i === 0) {
          const rest = JSON.parse(a.text).data;
          const result = JSON.parse(b.text).result;
          if (result.isError || result.structuredContent.rowCount !== 1 || rest.rowCount !== 1)
            throw new Error(`SELECT 1: REST ${a.text.slice(0, 300)}; MCP ${b.text.slice(0, 300)}`);
        }
      }
      const rest: number[] = [];
      const viaMcpTimes: number[] = [];
      // Interleaved, alternating which goes first, so drift and GC affect both sides alike.
      for (let i = 0; i < ITERATIONS; i++) {
        if (i % 2 === 0) {
          rest.push((await viaRest()).took);
          viaMcpTimes.push((await viaMcp()).took);
        } else {
          viaMcpTimes.push((await viaMcp()).took);
          rest.push((await viaRest()).took);
        }
      }
      // CPU per call: pairs of blocks (one of each kind, alternating which goes first); the figure is the
      // median of the pairs' differences, so that load drifting between pairs cancels out.
      const restCpu: number[] = [];
      const mcpCpu: number[] = [];
      const pairDiffs: number[] = [];
      for (let b = 0; b < CPU_BLOCKS; b++) {
        let r: number;
        let m: number;
        if (b % 2 === 0) {
          r = await cpuPerCall(viaRest, CPU_BLOCK);
          m = await cpuPerCall(viaMcp, CPU_BLOCK);
        } else {
          m = await cpuPerCall(viaMcp, CPU_BLOCK);
          r = await cpuPerCall(viaRest, CPU_BLOCK);
        }
        restCpu.push(r);
        mcpCpu.push(m);
        pairDiffs.push(m - r);
      }
      const [rc, mc] = [median(restCpu), median(mcpCpu)];
      const cpuAdded = median(pairDiffs);
      // The wiring alone, before and after, in this process.
      const w = wiring();
      for (let i = 0; i < 200; i++) {
        await w.perRequest();
        await w.perInstance();
      }
      const before: number[] = [];
      const after: number[] = [];
      for (let b = 0; b < WIRING_BLOCKS; b++) {
        before.push(await cpuPerCall(w.perRequest, WIRING_BLOCK));
        after.push(await cpuPerCall(w.perInstance, WIRING_BLOCK));
      }
      // Store calls per call (the handlers run in this thread on 2 cores; in worker threads otherwise,
      // where this process's client does not see them).
      const STORE_CALLS = 50;
      let restStore: number | undefined;
      let mcpStore: number | undefined;
      if (app.instances === 0) {
        const counter = storeCallCounter(app.orgId);
        try {
          for (let i = 0; i < STORE_CALLS; i++) await viaRest();
          restStore = counter.take() / STORE_CALLS;
          for (let i = 0; i < STORE_CALLS; i++) await viaMcp();
          mcpStore = counter.take() / STORE_CALLS;
        } finally {
          counter.stop();
        }
      }
      const cpuOver = cpuAdded > MCP_CPU_ADDED_TARGET_MS;
      const r = median(rest);
      const m = median(viaMcpTimes);
      const added = m - r;
      const over = added > MCP_ADDED_TARGET_MS;
      return {
        head: ['call', 'runs', 'REST median / p95', 'MCP median / p95', 'added', 'target'],
        rows: [
          [
            'run_query SELECT 1',
            String(ITERATIONS),
            `${ms(r)} / ${ms(p95(rest))}`,
            `${ms(m)} / ${ms(p95(viaMcpTimes))}`,
            ms(added),
            `added ≤ ${MCP_ADDED_TARGET_MS} ms: ${over ? 'OVER TARGET' : 'ok'}`,
          ],
          [
            'CPU per call (process)',
            String(CPU_BLOCK * CPU_BLOCKS),
            `${cpuMs(rc)}`,
            `${cpuMs(mc)}`,
            cpuMs(cpuAdded),
            `added ≤ ${MCP_CPU_ADDED_TARGET_MS} ms: ${cpuOver ? 'OVER TARGET' : 'ok'}`,
          ],
          [
            'MCP wiring alone (CPU per call)',
            String(WIRING_BLOCK * WIRING_BLOCKS),
            `before: ${cpuMs(median(before))}`,
            `now: ${cpuMs(median(after))}`,
            cpuMs(median(after) - median(before)),
            'server, transport and schemas per instance',
          ],
          [
            'store calls per call',
            String(STORE_CALLS),
            restStore === undefined ? 'n/a' : restStore.toFixed(2),
            mcpStore === undefined ? 'n/a' : mcpStore.toFixed(2),
            restStore === undefined || mcpStore === undefined ? 'n/a' : (mcpStore - restStore).toFixed(2),
            'one round trip before the statement (test/integration/connections-store-calls.test.ts)',
          ],
        ],
        notes: [
          'REST: POST /v1/connections/{id}/query {sql: "SELECT 1", maxRows: 1}. MCP: POST /v1/mcp with a JSON-RPC tools/call of run_query with the same arguments (stateless Streamable HTTP, JSON response), as an MCP client sends it; both over the same keep-alive HTTP/1.1 socket to the local runtime in this process, answers read as text.',
          "The MCP path adds: the transport's header checks and JSON-RPC validation, dispatch through the SDK Server (one per instance, shared/mcp/transport.ts), argument validation with the REST schemas, the Markdown text of the result, and the JSON-RPC envelope.",
          'The org rate limit is raised for the run so that it never answers 429.',
          "Store calls per call: every call to the store client for this organization or a key lookup, over 50 calls of each kind after the CPU blocks (3 per read: the UpdateItem that reads the connection and takes the history number before the statement, the entry PutItem alongside it, the outcome UpdateItem as the answer leaves; plus a rate-limit lease now and then, and a key lookup when this instance's copy is older than 10 s).",
          `CPU per call: process.cpuUsage() (user + system, every thread of this process: the HTTP client, the local runtime and its store; PostgreSQL is another process and does the same work for both) over ${CPU_BLOCKS} pairs of blocks of ${CPU_BLOCK} calls (one block of each kind per pair, alternating which goes first): the median block of each kind, and "added" is the median of the pairs' differences (differences from ${cpuMs(Math.min(...pairDiffs))} to ${cpuMs(Math.max(...pairDiffs))}).`,
        ],
        overTarget: [
          ...(over
            ? [
                `mcp/run_query SELECT 1: MCP adds ${ms(added)} (median) to REST (target ≤ ${MCP_ADDED_TARGET_MS} ms)`,
              ]
            : []),
          ...(cpuOver
            ? [
                `mcp/run_query SELECT 1: MCP uses ${cpuMs(cpuAdded)} more CPU per call than REST (target ≤ ${MCP_CPU_ADDED_TARGET_MS} ms)`,
              ]
            : []),
        ],
      };
    } finally {
      api?.close();
      await closeAllDrivers();
      await app?.stop();
      restoreEnv();
      await database.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};
