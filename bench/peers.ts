import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { generateKey } from '../shared/auth/key-material';
import { type DbServer, freePort, startPostgres } from '../test/support/databases';
import { type ServerProcess, spawnServer } from '../test/support/server-process';
import { type BenchModule, median, ms } from './context';

/**
 * Issue 33, "done when" (idle 2-core machine, one run, side by side), and the two targets of its points 3
 * and 4 that this bench measures too.
 */
export const PEERS_TARGETS = {
  /** MCP run_query SELECT 1 at 1 client: median ≤ MCP Toolbox's; at 16 clients: calls/s ≥ Toolbox's. */
  mcpVsToolbox: true,
  /** REST SELECT 1: at most this much added to bare pg (median, ms). */
  restAddedMs: 1.5,
  /** REST 10,000 rows: at most this ratio to bare pg + JSON.stringify. */
  rowsRatio: 1.2,
  /** REST at 32 clients (the load bench's GROUP BY): at least this many requests/s, p99 under this. */
  rest32PerSecond: 600,
  rest32P99Ms: 100,
  /** CPU per request, Loupe's processes and PostgreSQL's together (ms). */
  restCpuMs: 1.5,
  mcpCpuMs: 2.0,
  /** Store round trips on a read before the database call. */
  storeCallsBefore: 1,
  /** PostgreSQL server CPU of one Loupe read against the bare statement's (point 3). */
  pgCpuRatio: 3,
  /** The local runtime idle: CPU ms per second (point 4). */
  idleCpuMsPerS: 3,
};

/** The peers, installed from the npm registry into a temporary folder at bench time (no other downloads). */
const PEER_PACKAGES = [
  '@toolbox-sdk/server-linux-x64@1.12.0',
  '@bytebase/dbhub@1.4.0',
  '@modelcontextprotocol/server-postgres@0.6.2',
];

const SELECT1 = 'SELECT 1';
const ROWS_SQL =
  'SELECT g AS id, md5(g::text) AS name, now() AS ts, g * 1.5 AS amount FROM generate_series(1, 10000) g';
const GROUP_SQL =
  'SELECT region, COUNT(*) AS orders, ROUND(SUM(amount), 2) AS total FROM bench_orders GROUP BY region ORDER BY region';

/** 1 client: rounds of calls per side, the sides' order rotating each round. */
const ROUNDS = 10;
const CALLS_PER_ROUND = 30;
/** 16 clients: each side gets SECONDS_16 per round, ROUNDS_16 rounds. */
const CLIENTS_16 = 16;
const ROUNDS_16 = 3;
const SECONDS_16 = 3;
const CPU_CLIENTS = 8;
const CPU_SECONDS = 8;
const IDLE_SECONDS = 15;
/** Store round trips: each store call is held this long (storeCallsPerRequest). */
const HOLD_MS = 50;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(s.length * p) - 1)] : Number.NaN;
};
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));

/**
 * CPU time (ms) of `roots` and their descendants: every thread's /proc/<pid>/task/<tid>/schedstat
 * (nanoseconds on the CPU; a process's own schedstat counts its main thread only, and Go or Node
 * servers work in several threads).
 */
function treeCpuMs(roots: number[]): number {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {}
  }
  const tree = new Set(roots);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parent)
      if (!tree.has(pid) && tree.has(ppid)) {
        tree.add(pid);
        grew = true;
      }
  }
  let total = 0;
  for (const pid of tree) {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`))
        total += schedMs(`/proc/${pid}/task/${tid}/schedstat`);
    } catch {}
  }
  return total;
}
const schedMs = (path: string) => {
  try {
    return Number(readFileSync(path, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return 0;
  }
};
/** CPU time (ms) of one single-threaded process (a PostgreSQL backend). */
function pidCpuMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return 0;
  }
}

/** One side of the comparison: how to make one call, and the processes that serve it. */
interface Side {
  name: string;
  /** A fresh client (connection, MCP session) and its call; `close` ends it. */
  open(): Promise<{ call: () => Promise<void>; close: () => Promise<void> }>;
  /** Processes whose CPU counts as this side's (empty: measured in this process, not counted). */
  pids: () => number[];
  /** 16 concurrent calls share one client (a stdio server serves one client). */
  oneClient?: boolean;
}

/** An MCP side over the official SDK client: `tool` with `args`, the answer checked to be no error. */
function mcpSide(
  name: string,
  transport: () => StreamableHTTPClientTransport | StdioClientTransport,
  tool: string,
  args: Record<string, unknown>,
  pids: () => number[],
  oneClient = false,
): Side {
  return {
    name,
    pids,
    oneClient,
    async open() {
      const t = transport();
      const client = new Client({ name: 'loupe-bench', version: '1.0.0' });
      await client.connect(t);
      let checked = false;
      return {
        async call() {
          const r = (await client.callTool({ name: tool, arguments: args })) as {
            isError?: boolean;
            content?: { text?: string }[];
          };
          if (r.isError || !checked) {
            const text = JSON.stringify(r.content ?? r).slice(0, 400);
            if (r.isError || !/1/.test(text)) throw new Error(`${name}: ${tool} answered ${text}`);
            checked = true;
          }
        },
        close: () => client.close(),
      };
    },
  };
}

/** A keep-alive HTTP/1.1 JSON client for Loupe's REST API (one socket per client). */
function restCall(base: URL, key: string, path: string, body: unknown) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const payload = JSON.stringify(body);
  const call = () =>
    new Promise<string>((resolve, reject) => {
      const req = request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          method: 'POST',
          path: `${base.pathname.replace(/\/$/, '')}${path}`,
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) reject(new Error(`REST ${res.statusCode}: ${text.slice(0, 300)}`));
            else resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { call, close: () => agent.destroy() };
}

/** Runs `clients` loops of `call` for `seconds`; returns calls/s, latencies and errors. */
async function closedLoop(
  clients: { call: () => Promise<void> }[],
  seconds: number,
): Promise<{ calls: number; perSecond: number; latencies: number[]; errors: string[] }> {
  const latencies: number[] = [];
  const errors: string[] = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < until) {
        const t = performance.now();
        try {
          await c.call();
          latencies.push(performance.now() - t);
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { calls: latencies.length, perSecond: latencies.length / elapsed, latencies, errors };
}

/** `npm install` of the peers into `dir` (registry packages only; install scripts not run). */
function installPeers(dir: string): Promise<string | undefined> {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'loupe-bench-peers', private: true }));
  return new Promise((resolve) =>
    execFile(
      process.platform === 'win32' ? 'npm.cmd' : 'npm',
      ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', ...PEER_PACKAGES],
      { cwd: dir, timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 },
      (err, _out, stderr) => resolve(err ? `${err.message}\n${stderr}`.slice(0, 2000) : undefined),
    ),
  );
}

/** Starts a peer's process; resolves once `ready` answers (polled), with its pid. */
async function startPeer(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  ready: () => Promise<boolean>,
): Promise<ChildProcess> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => {
    output = (output + c.toString('utf8')).slice(-4000);
  });
  child.stderr?.on('data', (c: Buffer) => {
    output = (output + c.toString('utf8')).slice(-4000);
  });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) break;
    if (await ready().catch(() => false)) return child;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`${name} did not start: ${output}`);
}

/**
 * The floor of the SDK client: a Node process whose HTTP server answers each JSON-RPC request at once
 * (initialize, tools/list, and a fixed one-row result for tools/call), with no database, no checks and
 * no state. What a call costs the client, the HTTP exchange and one process hop, for every MCP side.
 */
const FLOOR_SERVER = `
const http = require('node:http');
const row = JSON.stringify({ columns: ['?column?'], rows: [[1]], rowCount: 1 });
const results = {
  initialize: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'floor', version: '1' } },
  'tools/list': { tools: [] },
  'tools/call': { content: [{ type: 'text', text: row }] },
};
http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    if (req.method !== 'POST') return res.writeHead(405).end();
    const m = JSON.parse(body);
    if (m.id === undefined) return res.writeHead(202).end();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: results[m.method] ?? {} }));
  });
}).listen(Number(process.argv[1]), '127.0.0.1');
`;

/** True once an MCP server answers initialize on `url`. */
async function mcpReady(url: string): Promise<boolean> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'ready', version: '1' },
      },
    }),
    signal: AbortSignal.timeout(2000),
  });
  await r.arrayBuffer();
  return r.status === 200;
}

/** Spawns load-client.mjs (bench/load.ts's clients, in a process of their own) and returns its figures. */
function loadClients(args: Record<string, unknown>): Promise<{
  ok: number;
  errors: number;
  causes: [string, number][];
  perSecond: number;
  p50: number;
  p99: number;
  cpuMs: number;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'load-client.mjs'), JSON.stringify(args)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`load client exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? ''));
      } catch (e) {
        reject(e);
      }
    });
  });
}

export const peers: BenchModule = {
  name: 'peers',
  description:
    'Loupe MCP and REST side by side with Google MCP Toolbox, DBHub and the reference server-postgres (installed from npm at bench time), and bare pg, on one embedded PostgreSQL; same MCP SDK client, interleaved rounds',
  async run() {
    const rows: string[][] = [];
    const notes: string[] = [];
    const overTarget: string[] = [];
    const load0 = loadavg()[0];
    const database: DbServer = await startPostgres();
    const peerDir = mkdtempSync(join(tmpdir(), 'loupe-bench-peers-'));
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-peers-data-'));
    const children: ChildProcess[] = [];
    const cleanups: (() => Promise<unknown> | unknown)[] = [];
    let loupe: ServerProcess | undefined;
    let installing: Promise<string | undefined> | undefined;
    const conn = {
      host: database.host,
      port: database.port,
      user: database.user,
      password: database.password,
      database: database.database,
    };
    const dsn = `postgres://${conn.user}:${conn.password}@${conn.host}:${conn.port}/${conn.database}`;
    const admin = new pg.Client({ ...conn, user: database.adminUser, password: database.adminPassword });
    const pgCpu = () => treeCpuMs(database.faults.pids().slice(0, 1));
    try {
      await admin.connect();
      await admin.query(
        "CREATE TABLE bench_orders AS SELECT g AS id, (ARRAY['north','south','east','west','central'])[1 + g % 5] AS region, (g % 997) * 1.25 AS amount FROM generate_series(1, 2000) g",
      );
      await admin.query(`GRANT SELECT ON bench_orders TO ${conn.user}`);
      installing = installPeers(peerDir);

      // Loupe: the local server as its own process, as `npm start` runs it.
      const adminKey = generateKey();
      loupe = await spawnServer('infra/local/server.ts', {
        PORT: '0',
        LOUPE_DATA_DIR: dataDir,
        LOUPE_ADMIN_KEY: adminKey,
        LOUPE_DEMO_DATA: 'false',
        LOUPE_LOG_LEVEL: 'SILENT',
        LOUPE_ORG_RATE_LIMIT: '100000000',
      });
      const base = new URL(`${loupe.url.replace(/\/$/, '')}/`);
      const loupePid = loupe.child.pid as number;
      const created = async (body: Record<string, unknown>) => {
        const r = await fetch(new URL('connections', base), {
          method: 'POST',
          headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await r.text();
        if (r.status !== 201) throw new Error(`create connection answered ${r.status}: ${text}`);
        return JSON.parse(text).data.id as string;
      };
      const connectionBody = {
        type: 'POSTGRES',
        host: conn.host,
        port: conn.port,
        database: conn.database,
        username: conn.user,
        password: conn.password,
      };
      const connectionId = await created({ name: 'Bench PostgreSQL', ...connectionBody });
      // The same database, with a function allowed by name: its reads are followed by DISCARD ALL.
      const resetId = await created({
        name: 'Bench PostgreSQL (allowedFunctions)',
        ...connectionBody,
        allowedFunctions: ['lower'],
      });

      const bare = new pg.Client(conn);
      await bare.connect();
      cleanups.push(() => bare.end());
      const bareSide: Side = {
        name: 'bare pg',
        pids: () => [],
        async open() {
          const c = new pg.Client(conn);
          await c.connect();
          return {
            call: async () => {
              await c.query(SELECT1);
            },
            close: () => c.end(),
          };
        },
      };
      const loupeMcp = mcpSide(
        'Loupe MCP run_query',
        () =>
          new StreamableHTTPClientTransport(new URL('mcp', base), {
            requestInit: { headers: { authorization: `Bearer ${adminKey}` } },
          }),
        'run_query',
        { connectionId, sql: SELECT1 },
        () => [loupePid],
      );
      const loupeRest: Side = {
        name: 'Loupe REST',
        pids: () => [loupePid],
        async open() {
          const c = restCall(base, adminKey, `/connections/${connectionId}/query`, { sql: SELECT1 });
          return { call: async () => void (await c.call()), close: async () => c.close() };
        },
      };

      const floorPort = await freePort();
      const floorUrl = `http://127.0.0.1:${floorPort}/mcp`;
      const floor = await startPeer(
        'the floor server',
        process.execPath,
        ['-e', FLOOR_SERVER, String(floorPort)],
        {},
        () => mcpReady(floorUrl),
      );
      children.push(floor);
      const floorSide = mcpSide(
        'SDK client floor (a server that answers at once)',
        () => new StreamableHTTPClientTransport(new URL(floorUrl)),
        'run_query',
        {},
        () => (floor.pid ? [floor.pid] : []),
      );

      const installError = await installing;
      const sides: Side[] = [bareSide, floorSide, loupeRest, loupeMcp];
      if (installError)
        notes.push(
          `The peers could not be installed from npm, so only Loupe and bare pg were measured: ${installError}`,
        );
      else {
        const bin = (p: string) => join(peerDir, 'node_modules', p);
        const toolboxPort = await freePort();
        const toolbox = await startPeer(
          'MCP Toolbox',
          bin('@toolbox-sdk/server-linux-x64/bin/toolbox'),
          [
            '--prebuilt',
            'postgres',
            '--port',
            String(toolboxPort),
            '--disable-version-check',
            '--log-level',
            'ERROR',
          ],
          {
            POSTGRES_HOST: conn.host,
            POSTGRES_PORT: String(conn.port),
            POSTGRES_DATABASE: conn.database,
            POSTGRES_USER: conn.user,
            POSTGRES_PASSWORD: conn.password,
          },
          () => mcpReady(`http://127.0.0.1:${toolboxPort}/mcp`),
        );
        children.push(toolbox);
        const dbhubPort = await freePort();
        // DBHub in its read-only mode (keyword check), as the issue's comparison ran it.
        const toml = join(peerDir, 'dbhub.toml');
        writeFileSync(
          toml,
          `[[sources]]\nid = "bench"\ndsn = "${dsn}?sslmode=disable"\n\n[[tools]]\nname = "execute_sql"\nsource = "bench"\nreadonly = true\n`,
        );
        const dbhub = await startPeer(
          'DBHub',
          process.execPath,
          [
            bin('@bytebase/dbhub/dist/index.js'),
            '--transport',
            'http',
            '--port',
            String(dbhubPort),
            `--config=${toml}`,
          ],
          {},
          () => mcpReady(`http://127.0.0.1:${dbhubPort}/mcp`),
        );
        children.push(dbhub);
        const referencePids: number[] = [];
        sides.push(
          mcpSide(
            'MCP Toolbox execute_sql',
            () => new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${toolboxPort}/mcp`)),
            'execute_sql',
            { sql: SELECT1 },
            () => [toolbox.pid as number],
          ),
          mcpSide(
            'DBHub execute_sql',
            () => new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${dbhubPort}/mcp`)),
            'execute_sql',
            { sql: SELECT1 },
            () => [dbhub.pid as number],
          ),
          mcpSide(
            'reference server-postgres query (stdio)',
            () => {
              const t = new StdioClientTransport({
                command: process.execPath,
                args: [bin('@modelcontextprotocol/server-postgres/dist/index.js'), dsn],
                stderr: 'ignore',
              });
              const start = t.start.bind(t);
              t.start = async () => {
                await start();
                if (t.pid) referencePids.push(t.pid);
              };
              return t;
            },
            'query',
            { sql: SELECT1 },
            () => referencePids,
            true,
          ),
        );
      }

      // --- 1 client: interleaved rounds, the sides' order rotating ------------------------------------
      const single = new Map<string, { lat: number[]; serverCpu: number; pgCpu: number; calls: number }>();
      const opened = await Promise.all(sides.map((s) => s.open()));
      cleanups.push(() => Promise.all(opened.map((o) => o.close().catch(() => {}))));
      for (let i = 0; i < 10; i++) for (const o of opened) await o.call(); // warm-up (pools, JIT)
      for (let r = 0; r < ROUNDS; r++)
        for (let k = 0; k < sides.length; k++) {
          const i = (k + r) % sides.length;
          const s = sides[i];
          const e = single.get(s.name) ?? { lat: [], serverCpu: 0, pgCpu: 0, calls: 0 };
          single.set(s.name, e);
          const c0 = treeCpuMs(s.pids());
          const p0 = pgCpu();
          for (let n = 0; n < CALLS_PER_ROUND; n++) {
            const t = performance.now();
            await opened[i].call();
            e.lat.push(performance.now() - t);
          }
          e.serverCpu += treeCpuMs(s.pids()) - c0;
          e.pgCpu += pgCpu() - p0;
          e.calls += CALLS_PER_ROUND;
        }

      // --- 16 clients: each side in turn for SECONDS_16, ROUNDS_16 rounds --------------------------------
      const many = new Map<
        string,
        { calls: number; seconds: number; lat: number[]; cpu: number; clientCpu: number; errors: string[] }
      >();
      const pools = new Map<string, { call: () => Promise<void>; close: () => Promise<void> }[]>();
      for (const s of sides) {
        const list = s.oneClient
          ? Array(CLIENTS_16).fill(await s.open())
          : await Promise.all(Array.from({ length: CLIENTS_16 }, () => s.open()));
        pools.set(s.name, list);
        cleanups.push(() => Promise.all([...new Set(list)].map((o) => o.close().catch(() => {}))));
        await closedLoop(list, 0.5); // warm-up
      }
      for (let r = 0; r < ROUNDS_16; r++)
        for (let k = 0; k < sides.length; k++) {
          const s = sides[(k + r) % sides.length];
          const e = many.get(s.name) ?? { calls: 0, seconds: 0, lat: [], cpu: 0, clientCpu: 0, errors: [] };
          many.set(s.name, e);
          const c0 = treeCpuMs(s.pids()) + pgCpu();
          const own0 = process.cpuUsage();
          const res = await closedLoop(pools.get(s.name) ?? [], SECONDS_16);
          const own = process.cpuUsage(own0);
          e.cpu += treeCpuMs(s.pids()) + pgCpu() - c0;
          e.clientCpu += (own.user + own.system) / 1000;
          e.calls += res.calls;
          e.seconds += res.calls / res.perSecond;
          // (a loop, not a spread: bare pg's 100,000 latencies would pass the call stack's limit)
          for (const l of res.latencies) e.lat.push(l);
          for (const x of res.errors) e.errors.push(x);
        }

      const toolbox1 = single.get('MCP Toolbox execute_sql');
      const toolbox16 = many.get('MCP Toolbox execute_sql');
      const bare1 = median(single.get('bare pg')?.lat ?? [Number.NaN]);
      const bare16 = many.get('bare pg');
      for (const s of sides) {
        const a = single.get(s.name);
        const b = many.get(s.name);
        if (!a || !b) continue;
        const m = median(a.lat);
        const perSecond = b.calls / b.seconds;
        const isLoupeMcp = s === loupeMcp;
        const target = isLoupeMcp
          ? toolbox1 && toolbox16
            ? `median ≤ Toolbox ${ms(median(toolbox1.lat))}: ${m <= median(toolbox1.lat) ? 'ok' : 'OVER TARGET'}; calls/s ≥ Toolbox ${(toolbox16.calls / toolbox16.seconds).toFixed(0)}: ${perSecond >= toolbox16.calls / toolbox16.seconds ? 'ok' : 'OVER TARGET'}`
            : 'Toolbox not measured'
          : s === bareSide
            ? 'baseline'
            : '';
        if (isLoupeMcp && toolbox1 && toolbox16) {
          if (m > median(toolbox1.lat))
            overTarget.push(
              `peers/MCP SELECT 1 at 1 client: Loupe ${ms(m)} median > MCP Toolbox ${ms(median(toolbox1.lat))}`,
            );
          if (perSecond < toolbox16.calls / toolbox16.seconds)
            overTarget.push(
              `peers/MCP SELECT 1 at 16 clients: Loupe ${perSecond.toFixed(0)} calls/s < MCP Toolbox ${(toolbox16.calls / toolbox16.seconds).toFixed(0)}`,
            );
        }
        rows.push([
          s.name,
          `${ms(m)} / ${ms(pct(a.lat, 0.99))}`,
          `${(m / bare1).toFixed(1)}×${toolbox1 ? ` / ${(m / median(toolbox1.lat)).toFixed(2)}×` : ''}`,
          `${perSecond.toFixed(0)}${b.errors.length ? ` (${b.errors.length} errors)` : ''}`,
          `${(perSecond / ((bare16?.calls ?? 0) / (bare16?.seconds ?? 1))).toFixed(2)}×${toolbox16 ? ` / ${(perSecond / (toolbox16.calls / toolbox16.seconds)).toFixed(2)}×` : ''}`,
          ms(pct(b.lat, 0.99)),
          s.pids().length ? (b.cpu / b.calls).toFixed(2) : `PostgreSQL only ${(b.cpu / b.calls).toFixed(2)}`,
          (a.pgCpu / a.calls).toFixed(3),
          (b.clientCpu / b.calls).toFixed(2),
          target,
        ]);
        if (b.errors.length)
          notes.push(`${s.name}: ${b.errors.length} errors at 16 clients, first: ${b.errors[0]}`);
      }

      // What the machine allows at 16 clients: its cores' CPU per second shared by the SDK clients (in this
      // process), the side's server and PostgreSQL; a side that needs more CPU per call than its share cannot
      // reach a rate, whatever its latency.
      const mcp16 = many.get(loupeMcp.name);
      if (mcp16 && toolbox16) {
        const cores = availableParallelism();
        const rate = toolbox16.calls / toolbox16.seconds;
        const budget = (cores * 1000) / rate;
        const clients = mcp16.clientCpu / mcp16.calls;
        const server = mcp16.cpu / mcp16.calls;
        notes.push(
          `CPU budget at 16 clients: ${cores} cores give ${(cores * 1000).toFixed(0)} ms of CPU per second; at MCP Toolbox's ${rate.toFixed(0)} calls/s that is ${budget.toFixed(2)} ms per call for everything on the machine. ` +
            `Toolbox used ${(toolbox16.cpu / toolbox16.calls).toFixed(2)} (server + PostgreSQL) and its SDK clients ${(toolbox16.clientCpu / toolbox16.calls).toFixed(2)}; ` +
            `a Loupe MCP call used ${server.toFixed(2)} (server + PostgreSQL) and its SDK clients ${clients.toFixed(2)}, so at most ${((cores * 1000) / (server + clients)).toFixed(0)} calls/s fit on this machine at today's CPU per call; ` +
            `at Toolbox's rate Loupe and PostgreSQL would have ${Math.max(0, budget - clients).toFixed(2)} ms per call.`,
        );
      }

      // --- REST: SELECT 1 and 10,000 rows at 1 client against bare pg + JSON.stringify, interleaved -----
      const restFigures: string[] = [];
      for (const [label, sql, iterations] of [
        ['SELECT 1', SELECT1, 200],
        ['10,000 rows', ROWS_SQL, 20],
      ] as const) {
        const c = restCall(base, adminKey, `/connections/${connectionId}/query`, { sql, maxRows: 10_000 });
        const api: number[] = [];
        const drv: number[] = [];
        const viaBare = async () => {
          const t = performance.now();
          const r = await bare.query(sql);
          JSON.stringify(r.rows);
          drv.push(performance.now() - t);
        };
        const viaApi = async () => {
          const t = performance.now();
          const text = await c.call();
          api.push(performance.now() - t);
          return text;
        };
        const first = JSON.parse(await viaApi()).data;
        const expected = sql === SELECT1 ? 1 : 10_000;
        if (first.rowCount !== expected)
          throw new Error(`REST ${label}: ${first.rowCount} rows, not ${expected}`);
        api.length = 0;
        for (let i = 0; i < 5; i++) await Promise.all([viaApi(), viaBare()]);
        api.length = 0;
        drv.length = 0;
        for (let i = 0; i < iterations; i++) {
          if (i % 2) {
            await viaApi();
            await viaBare();
          } else {
            await viaBare();
            await viaApi();
          }
        }
        c.close();
        const a = median(api);
        const d = median(drv);
        if (sql === SELECT1) {
          const over = a - d > PEERS_TARGETS.restAddedMs;
          if (over)
            overTarget.push(
              `peers/REST SELECT 1 adds ${ms(a - d)} to bare pg (target ≤ ${PEERS_TARGETS.restAddedMs} ms)`,
            );
          restFigures.push(
            `REST SELECT 1: ${ms(a)} median (p99 ${ms(pct(api, 0.99))}) against bare pg ${ms(d)}: **${ms(a - d)} added** (target ≤ ${PEERS_TARGETS.restAddedMs} ms: ${over ? 'OVER TARGET' : 'ok'})`,
          );
        } else {
          const over = a / d > PEERS_TARGETS.rowsRatio;
          if (over)
            overTarget.push(
              `peers/REST 10,000 rows: ${(a / d).toFixed(2)}× bare pg (target ≤ ${PEERS_TARGETS.rowsRatio}×)`,
            );
          restFigures.push(
            `REST 10,000 rows: ${ms(a)} median against bare pg + JSON.stringify ${ms(d)}: **${(a / d).toFixed(2)}×** (target ≤ ${PEERS_TARGETS.rowsRatio}×: ${over ? 'OVER TARGET' : 'ok'})`,
          );
        }
      }

      // --- REST at 32 clients (the load bench's GROUP BY), clients in a process of their own -------------
      {
        const c0 = treeCpuMs([loupePid]) + pgCpu();
        const r = await loadClients({
          mode: 'api',
          url: new URL(`connections/${connectionId}/query`, base).href,
          key: adminKey,
          body: { sql: GROUP_SQL, maxRows: 100 },
          clients: 32,
          seconds: 10,
        });
        const cpu = (treeCpuMs([loupePid]) + pgCpu() - c0) / Math.max(1, r.ok);
        const b = await loadClients({
          mode: 'pg',
          sql: GROUP_SQL,
          pg: conn,
          poolSize: 32,
          clients: 32,
          seconds: 10,
        });
        const over =
          r.perSecond < PEERS_TARGETS.rest32PerSecond || r.p99 >= PEERS_TARGETS.rest32P99Ms || r.errors > 0;
        if (over)
          overTarget.push(
            `peers/REST 32 clients: ${r.perSecond.toFixed(0)} req/s, p99 ${ms(r.p99)}, ${r.errors} errors (target ≥ ${PEERS_TARGETS.rest32PerSecond}/s, p99 < ${PEERS_TARGETS.rest32P99Ms} ms)`,
          );
        restFigures.push(
          `REST 32 clients (GROUP BY of bench/load.ts, 10 s): **${r.perSecond.toFixed(0)} req/s, p50 ${ms(r.p50)}, p99 ${ms(r.p99)}**, ${r.errors} errors, Loupe + PostgreSQL CPU ${cpu.toFixed(2)} ms per request (target ≥ ${PEERS_TARGETS.rest32PerSecond}/s, p99 < ${PEERS_TARGETS.rest32P99Ms} ms: ${over ? 'OVER TARGET' : 'ok'}); bare pg.Pool(32) ${b.perSecond.toFixed(0)} req/s, p99 ${ms(b.p99)}`,
        );
      }

      // --- CPU per request at 8 clients, SELECT 1 (the issue's profile): Loupe's process and PostgreSQL --
      const cpuFigures: string[] = [];
      {
        const c0 = treeCpuMs([loupePid]);
        const p0 = pgCpu();
        const r = await loadClients({
          mode: 'api',
          url: new URL(`connections/${connectionId}/query`, base).href,
          key: adminKey,
          body: { sql: SELECT1 },
          clients: CPU_CLIENTS,
          seconds: CPU_SECONDS,
        });
        const l = (treeCpuMs([loupePid]) - c0) / Math.max(1, r.ok);
        const p = (pgCpu() - p0) / Math.max(1, r.ok);
        const over = l + p > PEERS_TARGETS.restCpuMs;
        if (over)
          overTarget.push(
            `peers/CPU per REST request ${(l + p).toFixed(2)} ms (target ≤ ${PEERS_TARGETS.restCpuMs} ms)`,
          );
        cpuFigures.push(
          `REST SELECT 1 at ${CPU_CLIENTS} clients: **${(l + p).toFixed(2)} ms** CPU per request (Loupe ${l.toFixed(2)} + PostgreSQL ${p.toFixed(2)}; clients ${(r.cpuMs / Math.max(1, r.ok)).toFixed(2)} more, in their own process; ${r.perSecond.toFixed(0)} req/s) — target ≤ ${PEERS_TARGETS.restCpuMs} ms: ${over ? 'OVER TARGET' : 'ok'}`,
        );
      }
      {
        const clients = await Promise.all(Array.from({ length: CPU_CLIENTS }, () => loupeMcp.open()));
        cleanups.push(() => Promise.all(clients.map((o) => o.close().catch(() => {}))));
        await closedLoop(clients, 0.5);
        const c0 = treeCpuMs([loupePid]);
        const p0 = pgCpu();
        const own0 = process.cpuUsage();
        const r = await closedLoop(clients, CPU_SECONDS);
        const own = process.cpuUsage(own0);
        const l = (treeCpuMs([loupePid]) - c0) / Math.max(1, r.calls);
        const p = (pgCpu() - p0) / Math.max(1, r.calls);
        const over = l + p > PEERS_TARGETS.mcpCpuMs;
        if (over)
          overTarget.push(
            `peers/CPU per MCP call ${(l + p).toFixed(2)} ms (target ≤ ${PEERS_TARGETS.mcpCpuMs} ms)`,
          );
        cpuFigures.push(
          `MCP run_query SELECT 1 at ${CPU_CLIENTS} clients: **${(l + p).toFixed(2)} ms** CPU per call (Loupe ${l.toFixed(2)} + PostgreSQL ${p.toFixed(2)}; the SDK clients ${((own.user + own.system) / 1000 / Math.max(1, r.calls)).toFixed(2)} more, in the bench process; ${r.perSecond.toFixed(0)} calls/s) — target ≤ ${PEERS_TARGETS.mcpCpuMs} ms: ${over ? 'OVER TARGET' : 'ok'}`,
        );
      }

      // --- PostgreSQL server CPU per read against the bare statement, call by call (point 3) ------------
      {
        const loupeBackends = async () =>
          (
            await admin.query<{ pid: number }>(
              "SELECT pid FROM pg_stat_activity WHERE application_name = 'loupe' AND backend_type = 'client backend'",
            )
          ).rows.map((r) => r.pid);
        const barePid = (await bare.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const PAIRS = 100;
        const figures: Record<'clean' | 'reset', { ratios: number[]; loupe: number; bare: number }> = {
          clean: { ratios: [], loupe: 0, bare: 0 },
          reset: { ratios: [], loupe: 0, bare: 0 },
        };
        for (const kind of ['clean', 'reset'] as const) {
          const c = restCall(
            base,
            adminKey,
            `/connections/${kind === 'clean' ? connectionId : resetId}/query`,
            {
              sql: SELECT1,
            },
          );
          for (let i = 0; i < 20; i++) await c.call();
          for (let round = 0; round < 8; round++) {
            // One bare statement, one Loupe read, in turn: both backends see the same cadence. Only this
            // connection's pool is busy in the round, so the 'loupe' backends' time is its reads'.
            // CPU of each backend at the start; backends that close meanwhile (idle ones of earlier phases)
            // drop out, ones that open count from zero.
            const start = new Map((await loupeBackends()).map((pid) => [pid, pidCpuMs(pid)]));
            const b0 = pidCpuMs(barePid);
            for (let i = 0; i < PAIRS; i++) {
              await c.call();
              await bare.query(SELECT1);
            }
            await sleep(20);
            const bareMs = pidCpuMs(barePid) - b0;
            let loupeMs = 0;
            for (const pid of await loupeBackends()) loupeMs += pidCpuMs(pid) - (start.get(pid) ?? 0);
            figures[kind].bare += bareMs;
            figures[kind].loupe += loupeMs;
            if (bareMs > 0) figures[kind].ratios.push(loupeMs / bareMs);
          }
          c.close();
        }
        const perRead = (ms: number) => `${((ms / (8 * PAIRS)) * 1000).toFixed(0)} µs`;
        const cleanRatio = median(figures.clean.ratios);
        const resetRatio = median(figures.reset.ratios);
        const over = cleanRatio > PEERS_TARGETS.pgCpuRatio;
        if (over)
          overTarget.push(
            `peers/PostgreSQL CPU per Loupe read ${cleanRatio.toFixed(2)}× the bare statement's (target ≤ ${PEERS_TARGETS.pgCpuRatio}×)`,
          );
        cpuFigures.push(
          `PostgreSQL server CPU per read (SELECT 1; one Loupe read and one bare statement in turn, 8 rounds of ${PAIRS}; backends' time from /proc/<pid>/schedstat): **a Loupe read ${perRead(figures.clean.loupe)}, ${cleanRatio.toFixed(2)}× the bare statement's ${perRead(figures.clean.bare)}** (median of the rounds' ratios; target ≤ ${PEERS_TARGETS.pgCpuRatio}×: ${over ? 'OVER TARGET' : 'ok'}). A read of a connection with allowedFunctions, followed by DISCARD ALL and the session settings: ${perRead(figures.reset.loupe)}, ${resetRatio.toFixed(2)}× the bare statement's ${perRead(figures.reset.bare)}.`,
        );
      }

      // --- Idle: the local server doing nothing (point 4) --------------------------------------------------
      // A server of its own, started for this: the one measured above may still be writing a snapshot of
      // its store after the load (the write log of tens of thousands of reads passes the snapshot
      // threshold), which is that load's cost, not idle polling.
      {
        const idleDir = mkdtempSync(join(tmpdir(), 'loupe-bench-peers-idle-'));
        const idle = await spawnServer('infra/local/server.ts', {
          PORT: '0',
          LOUPE_DATA_DIR: idleDir,
          LOUPE_ADMIN_KEY: adminKey,
          LOUPE_DEMO_DATA: 'false',
          LOUPE_LOG_LEVEL: 'SILENT',
        });
        let perS: number;
        try {
          // The pollers back off from 250 ms to 10 s once their queues stay empty: about 25 s after a start.
          await sleep(30_000);
          const idlePid = idle.child.pid as number;
          const c0 = treeCpuMs([idlePid]);
          const t0 = performance.now();
          await sleep(IDLE_SECONDS * 1000);
          perS = (treeCpuMs([idlePid]) - c0) / ((performance.now() - t0) / 1000);
        } finally {
          await idle.stop();
          rmSync(idleDir, { recursive: true, force: true });
        }
        const over = perS > PEERS_TARGETS.idleCpuMsPerS;
        if (over)
          overTarget.push(
            `peers/idle CPU ${perS.toFixed(2)} ms/s (target ≤ ${PEERS_TARGETS.idleCpuMsPerS} ms/s)`,
          );
        cpuFigures.push(
          `Idle: a local server started for this (store, queue and scheduler pollers, no requests; from 30 s after its start, when the pollers have backed off) used **${perS.toFixed(2)} ms of CPU per second** over ${IDLE_SECONDS} s (target ≤ ${PEERS_TARGETS.idleCpuMsPerS} ms/s: ${over ? 'OVER TARGET' : 'ok'}).`,
        );
      }

      // --- Store calls per request: the local runtime in this process, its store client counted ----------
      cpuFigures.push(...(await storeCallsPerRequest(database, overTarget)));

      notes.push(
        `Machine: ${availableParallelism()} cores, load average ${load0.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end (the done-when figures are for an idle machine).`,
        '1 client: each side in turn makes ' +
          `${CALLS_PER_ROUND} sequential SELECT 1 calls, ${ROUNDS} rounds, the order rotating each round; "ratio" is the median against bare pg and against MCP Toolbox. ` +
          `16 clients: each side in turn for ${SECONDS_16} s, ${ROUNDS_16} rounds; ${CLIENTS_16} SDK clients each with their own transport (the stdio reference server serves one client: 16 calls in flight on its one connection). ` +
          'CPU per call at 16 clients: the side\'s processes (Loupe: its server, with the store in it; peers: their server process) and PostgreSQL; the MCP clients (same SDK for every side) are counted apart ("SDK clients", this process\'s CPU: for bare pg its pg.Clients, for the stdio server its one client). "PostgreSQL ms per call": PostgreSQL\'s processes during the 1-client rounds.',
        'Sides: Loupe run_query (POST /v1/mcp, the local server as `npm start` runs it, its own process) and REST (POST /v1/connections/{id}/query); MCP Toolbox 1.12 `--prebuilt postgres` (execute_sql); DBHub 1.4.0 (execute_sql, readonly = true); the reference @modelcontextprotocol/server-postgres 0.6.2 over stdio (query, in a read-only transaction); bare pg: a pg.Client in the bench process; the SDK client floor: a Node process answering every JSON-RPC request at once (no database, no checks), what a call costs the SDK client and the HTTP exchange for every MCP side. All on one embedded PostgreSQL the bench starts; the peers are installed with npm into a temporary folder (install scripts not run).',
        ...restFigures,
        ...cpuFigures,
      );
      return {
        head: [
          'side (SELECT 1)',
          '1 client median / p99',
          'ratio to bare / Toolbox',
          '16 clients calls/s',
          'ratio to bare / Toolbox',
          '16 clients p99',
          'CPU ms per call (server + PostgreSQL)',
          'PostgreSQL ms per call',
          'SDK clients CPU ms per call (16 clients)',
          'target (issue 33)',
        ],
        rows,
        notes,
        overTarget,
      };
    } finally {
      for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => {});
      for (const c of children) c.kill('SIGTERM');
      await loupe?.stop();
      await installing; // an install still running would write into the folder removed below
      await admin.end().catch(() => {});
      await database.stop();
      rmSync(peerDir, { recursive: true, force: true });
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};

/**
 * Store calls per request on a read (REST and MCP), counted on the local runtime's own store client in
 * this process, and the round trips the read waits for: with every store call held for HOLD_MS (a store
 * far away), the database call starts after (round trips before it) × HOLD_MS and the answer arrives
 * after (round trips in all) × HOLD_MS; what the process itself takes is far below HOLD_MS. Calls made
 * but not waited for (one alongside the statement, one after the answer) do not add to either.
 * Also the store calls per second of the idle runtime (queue and scheduler pollers).
 */
async function storeCallsPerRequest(database: DbServer, overTarget: string[]): Promise<string[]> {
  const { startLocal } = await import('../infra/local/app');
  const { documentClient } = await import('../shared/platform/db/client');
  const { closeAllDrivers } = await import('../shared/databases/drivers/index');
  const { snapshotEnv, LOCAL_RUNTIME_ENV } = await import('./query');
  const restore = snapshotEnv(LOCAL_RUNTIME_ENV);
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-peers-calls-'));
  const key = generateKey();
  const app = await startLocal({
    port: 0,
    dataDir,
    instances: 0,
    env: {
      LOUPE_ADMIN_KEY: key,
      LOUPE_DEMO_DATA: 'false',
      LOUPE_LOG_LEVEL: 'SILENT',
      LOUPE_ORG_RATE_LIMIT: '100000000',
    },
    log: () => {},
  });
  const events: { what: string; at: number }[] = [];
  let hold = 0;
  const client = documentClient() as unknown as { send: (op: string, input: unknown) => Promise<unknown> };
  const send = client.send.bind(client);
  client.send = async (op, input) => {
    events.push({ what: `store ${op} ${pkOf(input)}`, at: performance.now() });
    if (hold) await sleep(hold);
    return send(op, input);
  };
  const connect = pg.Pool.prototype.connect;
  pg.Pool.prototype.connect = function (this: pg.Pool, ...args: unknown[]) {
    events.push({ what: 'database', at: performance.now() });
    return (connect as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof connect;
  try {
    const base = new URL(`${app.url.replace(/\/$/, '')}/`);
    const r = await fetch(new URL('connections', base), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'pg',
        type: 'POSTGRES',
        host: database.host,
        port: database.port,
        database: database.database,
        username: database.user,
        password: database.password,
      }),
    });
    const id = JSON.parse(await r.text()).data.id as string;
    const rest = restCall(base, key, `/connections/${id}/query`, { sql: SELECT1 });
    const mcp = await mcpSide(
      'mcp',
      () =>
        new StreamableHTTPClientTransport(new URL('mcp', base), {
          requestInit: { headers: { authorization: `Bearer ${key}` } },
        }),
      'run_query',
      { connectionId: id, sql: SELECT1 },
      () => [],
    ).open();
    const counted = async (call: () => Promise<unknown>, n: number) => {
      for (let i = 0; i < 20; i++) await call(); // warm caches, rate-limit lease, pool
      let calls = 0;
      let before = 0;
      let all = 0;
      hold = HOLD_MS;
      try {
        for (let i = 0; i < n; i++) {
          events.length = 0;
          const started = performance.now();
          await call();
          const answered = performance.now();
          await sleep(HOLD_MS + 20); // calls made after the answer (not awaited by it) are counted too
          const own = events.filter((e) => e.what === 'database' || !/ (QUEUE|SCHEDULES)/.test(e.what));
          const db = own.find((e) => e.what === 'database');
          calls += own.filter((e) => e.what !== 'database').length;
          before += Math.floor(((db?.at ?? answered) - started) / HOLD_MS);
          all += Math.floor((answered - started) / HOLD_MS);
        }
      } finally {
        hold = 0;
      }
      return { calls: calls / n, before: before / n, all: all / n };
    };
    const restCalls = await counted(() => rest.call(), 20);
    const mcpCalls = await counted(() => mcp.call(), 20);
    rest.close();
    await mcp.close();
    events.length = 0;
    await sleep(10_000);
    const idlePerS = events.filter((e) => e.what !== 'database').length / 10;
    const out: string[] = [];
    for (const [label, c] of [
      ['REST', restCalls],
      ['MCP', mcpCalls],
    ] as const) {
      const over = c.before > PEERS_TARGETS.storeCallsBefore;
      if (over)
        overTarget.push(
          `peers/${label} read: ${c.before.toFixed(1)} store round trips before the database call (target ≤ ${PEERS_TARGETS.storeCallsBefore})`,
        );
      out.push(
        `Store calls per ${label} read (SELECT 1, steady state, 20 reads, each store call held ${HOLD_MS} ms): ${c.calls.toFixed(2)} calls, **${c.before.toFixed(2)} round trips before the database call**, ${c.all.toFixed(2)} before the answer (target ≤ ${PEERS_TARGETS.storeCallsBefore} before: ${over ? 'OVER TARGET' : 'ok'}).`,
      );
    }
    out.push(`Idle store calls (queue and scheduler pollers): ${idlePerS.toFixed(1)} per second over 10 s.`);
    return out;
  } finally {
    pg.Pool.prototype.connect = connect;
    await app.stop();
    await closeAllDrivers();
    restore();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const pkOf = (input: unknown) => {
  const i = input as {
    Key?: { pk?: string };
    Item?: { pk?: string };
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  return String(i?.Key?.pk ?? i?.Item?.pk ?? i?.ExpressionAttributeValues?.[':pk'] ?? '');
};
