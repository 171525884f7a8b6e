import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type LocalApp, startLocal } from '../infra/local/app';
import { generateKey } from '../shared/auth/key-material';
import { closeAllDrivers } from '../shared/databases/drivers/index';
import { resetConfig } from '../shared/platform/config';
import { resetDocumentClient } from '../shared/platform/db/client';
import { db } from '../shared/platform/db/store';
import { resetEncryption } from '../shared/platform/encryption';
import { startPostgres } from '../test/support/databases';
import { type BenchModule, median, ms } from './context';

/** Target (issue 15): `SELECT 1` through the API adds at most 5 ms (median) to the bare driver. */
export const SELECT1_ADDED_TARGET_MS = 5;
/** Target (issue 15): 10,000 rows through the API take at most 1.2× the bare driver + JSON.stringify. */
export const ROWS_RATIO_TARGET = 1.2;

const SELECT1 = 'SELECT 1';
const ROWS_SQL =
  'SELECT g AS id, md5(g::text) AS name, now() AS ts, g * 1.5 AS amount FROM generate_series(1, 10000) g';
const ROWS = 10_000;

interface Case {
  label: string;
  sql: string;
  maxRows: number;
  warmup: number;
  iterations: number;
}

const CASES: Case[] = [
  { label: 'SELECT 1', sql: SELECT1, maxRows: 1, warmup: 30, iterations: 200 },
  { label: '10,000 rows', sql: ROWS_SQL, maxRows: ROWS, warmup: 5, iterations: 25 },
];

const p95 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)];
};

/** A keep-alive HTTP/1.1 client (one socket), reading the answer as text like any API client. */
export function apiClient(port: number, key: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const call = (method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          agent,
          host: '127.0.0.1',
          port,
          method,
          path: `/v1${path}`,
          headers: {
            authorization: `Bearer ${key}`,
            ...extraHeaders,
            ...(payload
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { call, close: () => agent.destroy() };
}

/** Saves the process environment variables startLocal changes, to put them back afterwards. */
/**
 * The local runtime in this process on a fresh data directory, no demo data, an organization limit that
 * never answers 429 mid-run (its leases then grow to a tenth of it: rare writes), and one POSTGRES
 * connection to `database`: what the query and mcp benches measure against.
 */
export async function startWithPostgres(
  dataDir: string,
  adminKey: string,
  database: { host: string; port: number; database: string; user: string; password: string },
): Promise<{ app: LocalApp; api: ReturnType<typeof apiClient>; id: string }> {
  const app = await startLocal({
    port: 0,
    dataDir,
    env: {
      LOUPE_ADMIN_KEY: adminKey,
      LOUPE_DEMO_DATA: 'false',
      LOUPE_LOG_LEVEL: 'SILENT',
      LOUPE_ORG_RATE_LIMIT: '1000000',
    },
    log: () => {},
  });
  const api = apiClient(app.port, adminKey);
  const created = await api.call('POST', '/connections', {
    name: 'Bench PostgreSQL',
    type: 'POSTGRES',
    host: database.host,
    port: database.port,
    database: database.database,
    username: database.user,
    password: database.password,
  });
  if (created.status !== 201)
    throw new Error(`create connection answered ${created.status}: ${created.text}`);
  return { app, api, id: JSON.parse(created.text).data.id as string };
}

/** The variables the local runtime sets in this process (startWithPostgres): restored after a bench. */
export const LOCAL_RUNTIME_ENV = [
  'LOUPE_ADMIN_KEY',
  'LOUPE_DEMO_DATA',
  'LOUPE_LOG_LEVEL',
  'LOUPE_ORG_RATE_LIMIT',
  'LOUPE_DATA_DIR',
  'LOUPE_RUNTIME',
  'LOUPE_DYNAMODB_ENDPOINT',
];

export function snapshotEnv(names: string[]) {
  const saved = new Map(names.map((n) => [n, process.env[n]]));
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetConfig();
    resetDocumentClient();
    resetEncryption();
  };
}

export const query: BenchModule = {
  name: 'query',
  description:
    'Query overhead: POST /v1/connections/{id}/query on the local runtime (warm pool) vs the bare pg driver + JSON.stringify, same embedded PostgreSQL, interleaved runs',
  async run() {
    const database = await startPostgres();
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-query-'));
    const adminKey = generateKey();
    const restoreEnv = snapshotEnv(LOCAL_RUNTIME_ENV);
    let app: LocalApp | undefined;
    let api: ReturnType<typeof apiClient> | undefined;
    const bare = new pg.Pool({
      host: database.host,
      port: database.port,
      user: database.user,
      password: database.password,
      database: database.database,
      max: 3,
    });
    try {
      let id: string;
      ({ app, api, id } = await startWithPostgres(dataDir, adminKey, database));
      const tested = await api.call('POST', `/connections/${id}/test`);
      if (tested.status !== 200) throw new Error(`connection test answered ${tested.status}: ${tested.text}`);

      const client = api;
      const viaApi = async (c: Case) => {
        const started = performance.now();
        const r = await client.call('POST', `/connections/${id}/query`, { sql: c.sql, maxRows: c.maxRows });
        const took = performance.now() - started;
        if (r.status !== 200) throw new Error(`query answered ${r.status}: ${r.text.slice(0, 500)}`);
        return { took, text: r.text };
      };
      const viaDriver = async (c: Case) => {
        const started = performance.now();
        const r = await bare.query(c.sql);
        const json = JSON.stringify(r.rows);
        return { took: performance.now() - started, rows: r.rows.length, bytes: json.length };
      };

      const rows: string[][] = [];
      const notes: string[] = [];
      const overTarget: string[] = [];
      for (const c of CASES) {
        // Warm-up: pools, JIT, caches; the answers are checked once here (not parsed in timed runs).
        for (let i = 0; i < c.warmup; i++) {
          const [a, b] = [await viaApi(c), await viaDriver(c)];
          if (i === 0) {
            const data = JSON.parse(a.text).data;
            const expected = c.maxRows === 1 ? 1 : ROWS;
            if (data.rowCount !== expected || data.truncated || b.rows !== expected)
              throw new Error(
                `${c.label}: expected ${expected} rows, API gave ${data.rowCount}, driver ${b.rows}`,
              );
          }
        }
        const service: number[] = [];
        const driver: number[] = [];
        const driverTime: number[] = [];
        // Interleaved, alternating which goes first, so drift and GC affect both sides alike.
        for (let i = 0; i < c.iterations; i++) {
          if (i % 2 === 0) {
            const a = await viaApi(c);
            service.push(a.took);
            driverTime.push(executionTimeOf(a.text));
            driver.push((await viaDriver(c)).took);
          } else {
            driver.push((await viaDriver(c)).took);
            const a = await viaApi(c);
            service.push(a.took);
            driverTime.push(executionTimeOf(a.text));
          }
        }
        const s = median(service);
        const d = median(driver);
        const added = s - d;
        const ratio = s / d;
        const over = c.maxRows === 1 ? added > SELECT1_ADDED_TARGET_MS : ratio > ROWS_RATIO_TARGET;
        const target =
          c.maxRows === 1 ? `added ≤ ${SELECT1_ADDED_TARGET_MS} ms` : `ratio ≤ ${ROWS_RATIO_TARGET}×`;
        if (over)
          overTarget.push(
            c.maxRows === 1
              ? `query/${c.label}: the API adds ${ms(added)} (median) to the bare driver (target ≤ ${SELECT1_ADDED_TARGET_MS} ms)`
              : `query/${c.label}: the API takes ${ratio.toFixed(2)}× the bare driver (target ≤ ${ROWS_RATIO_TARGET}×)`,
          );
        rows.push([
          c.label,
          String(c.iterations),
          `${ms(s)} / ${ms(p95(service))}`,
          `${ms(d)} / ${ms(p95(driver))}`,
          ms(median(driverTime)),
          ms(added),
          `${ratio.toFixed(2)}×`,
          `${target}: ${over ? 'OVER TARGET' : 'ok'}`,
        ]);
      }
      // For scale: one store round trip (GetItem through the service's own document client, dynalite in
      // this process). The query path makes three store calls in steady state (key with the user's copy;
      // connection read + history number; history entry), one after the other, plus a rate-limit lease
      // write now and then.
      const store: number[] = [];
      for (let i = 0; i < 120; i++) {
        const started = performance.now();
        await db.get('BENCH#none', 'none');
        if (i >= 20) store.push(performance.now() - started);
      }
      notes.push(
        `one store round trip (GetItem via the service's document client to the local dynalite): median ${ms(median(store))}, p95 ${ms(p95(store))}. The query path makes 3 store calls in steady state, in 3 sequential steps around the statement: the API key (carrying the user's role and connections); one UpdateItem that reads the connection and takes the history number; the history entry. A rate-limit lease write is added when this instance's lease runs out.`,
        'API: POST /v1/connections/{id}/query over a keep-alive HTTP/1.1 socket to the local runtime in this process (auth, org rate limit, connection load, password decrypt, guard, pooled driver, query history), answer read as text.',
        'bare: pg.Pool in this process running the same SQL, then JSON.stringify(rows). Runs are interleaved, alternating which goes first; "median / p95" per side.',
        '"in driver" is the executionTime the API reports (the driver call: transaction, cursor, fetches, value normalization).',
        'The org rate limit is raised for the run so that it never answers 429; the instance leases admissions from the shared count (1, 2, 4, … up to a tenth of the limit), so after the first requests no lease write happens (with the default 600 a busy instance writes once per 60 requests).',
      );
      return {
        head: [
          'query',
          'runs',
          'API median / p95',
          'bare median / p95',
          'in driver',
          'added',
          'ratio',
          'target',
        ],
        rows,
        notes,
        overTarget,
      };
    } finally {
      api?.close();
      await bare.end().catch(() => {});
      await closeAllDrivers();
      await app?.stop();
      restoreEnv();
      await database.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
};

function executionTimeOf(text: string): number {
  // The field sits near the end of a large answer; find it without parsing the whole body.
  const m = /"executionTime":([\d.]+)/.exec(text.slice(-400));
  return m ? Number(m[1]) : Number.NaN;
}
