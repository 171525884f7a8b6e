import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { LocalApp } from '../infra/local/app';
import { generateKey } from '../shared/auth/key-material';
import { closeAllDrivers } from '../shared/databases/drivers/index';
import { type DbServer, startPostgres, startStockPostgres } from '../test/support/databases';
import { createFieldDatabase, FIELD_CORPUS } from '../test/support/field-schema';
import { type BenchModule, median, ms } from './context';
import { LOCAL_RUNTIME_ENV, snapshotEnv, startWithPostgres } from './query';

/**
 * First reads on PostgreSQL as teams run it (issue 43): on the embedded PostgreSQL (no JIT, no
 * extensions) and on Debian's PostgreSQL (JIT on by default), the first read of new statement shapes
 * through `POST /v1/connections/{id}/query`, alone, 32 at once (one shape, then 32 shapes), 32 clients
 * for 10 s on a new shape, the first read of a new connection to a database of 3,000 tables and
 * 300 views, and on the stock server a new connection's first reads over the tests' field schema
 * (test/support/field-schema.ts: PostGIS and other extensions, owner code); each beside the same reads
 * through a bare `pg` Pool. It prints figures and asserts nothing (issue 43's targets are noted).
 * Every loop is bounded in count and time; traffic goes to 127.0.0.1 only.
 */

const CONCURRENT = 32;
const LOAD_SECONDS = 10;
const REQUEST_TIMEOUT_MS = 60_000;
/** After a phase, how long to wait for Loupe's backends (application_name 'loupe') to go idle. */
const DRAIN_LIMIT_MS = 180_000;
const GROUP_COLUMNS = ['status', 'region', 'channel', 'priority', 'currency', 'warehouse', 'discount'];

/**
 * Statement shape `k` (1…127): a GROUP BY over the subset of GROUP_COLUMNS given by k's bits, so
 * shapes differ in structure, not only in literals or aliases (the read: orders of customer 7
 * by status).
 */
const shape = (k: number) => {
  const cols = GROUP_COLUMNS.filter((_, i) => k & (1 << i)).join(', ');
  return `SELECT ${cols}, count(*) AS n, sum(amount) AS total FROM orders WHERE customer_id = 7 GROUP BY ${cols} ORDER BY ${cols}`;
};

const SETUP = `
CREATE TABLE customers AS SELECT g AS id, 'Customer ' || g AS name FROM generate_series(1, 200) g;
ALTER TABLE customers ADD PRIMARY KEY (id);
CREATE TABLE orders AS
  SELECT g AS id, 1 + g % 200 AS customer_id,
         (ARRAY['pending','paid','shipped','cancelled'])[1 + g % 4] AS status,
         (ARRAY['north','south','east','west','central'])[1 + g % 5] AS region,
         (ARRAY['web','store','phone'])[1 + g % 3] AS channel, g % 3 AS priority,
         (ARRAY['EUR','USD'])[1 + g % 2] AS currency, 'W' || g % 4 AS warehouse,
         (g % 4) * 0.05 AS discount, (g % 997) * 1.25 AS amount
  FROM generate_series(1, 2000) g;
ALTER TABLE orders ADD PRIMARY KEY (id);
CREATE INDEX orders_customer ON orders (customer_id);
ANALYZE;
`;

interface Target {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

interface Call {
  status: number;
  ms: number;
  error?: string;
}

/** One POST /v1/connections/{id}/query, its status and time (0 when it failed without an answer). */
async function apiRead(base: string, key: string, id: string, sql: string): Promise<Call> {
  const started = performance.now();
  try {
    const r = await fetch(`${base}/connections/${id}/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sql, maxRows: 100 }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await r.text();
    return {
      status: r.status,
      ms: performance.now() - started,
      error: r.status === 200 ? undefined : text.slice(0, 160),
    };
  } catch (e) {
    return { status: 0, ms: performance.now() - started, error: (e as Error).message };
  }
}

async function bareRead(pool: pg.Pool, sql: string): Promise<Call> {
  const started = performance.now();
  try {
    const r = await pool.query(sql);
    JSON.stringify(r.rows);
    return { status: 200, ms: performance.now() - started };
  } catch (e) {
    return { status: 0, ms: performance.now() - started, error: (e as Error).message };
  }
}

/** "32×200" or "20×200, 12×504". */
const statuses = (calls: { status: number }[]) => {
  const n = new Map<number, number>();
  for (const c of calls) n.set(c.status, (n.get(c.status) ?? 0) + 1);
  return [...n.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, k]) => `${k}×${s || 'none'}`)
    .join(', ');
};

/**
 * Waits (bounded) until no backend of Loupe's pools is active; answers how long it took or how many
 * remain, the text carrying `(!)` when one was still active 5 s after the last answer (issue 43).
 */
async function drain(admin: pg.Client): Promise<string> {
  const started = performance.now();
  let active = 0;
  while (performance.now() - started < DRAIN_LIMIT_MS) {
    const r = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'loupe' AND state = 'active'`,
    );
    active = r.rows[0].n;
    if (!active) break;
    await new Promise((res) => setTimeout(res, 250));
  }
  const s = ((performance.now() - started) / 1000).toFixed(1);
  const late = active || performance.now() - started > 5000 ? ' (!)' : '';
  return active ? `${active} still active after ${s} s${late}` : `idle after ${s} s${late}`;
}

/** 32 keep-alive clients for LOAD_SECONDS in their own process (bench/load-client.mjs), no warm-up. */
function loadClients(args: Record<string, unknown>): Promise<{
  ok: number;
  errors: number;
  causes: [string, number][];
  perSecond: number;
  p99: number;
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
    const kill = setTimeout(() => child.kill('SIGKILL'), (LOAD_SECONDS + 120) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(kill);
      if (code !== 0) return reject(new Error(`load client exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? ''));
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** "3000×200, 12 errors (first: HTTP 504 QUERY_TIMEOUT …)": load-client keeps the first five causes. */
const loadStatuses = (r: { ok: number; errors: number; causes: [string, number][] }) => {
  if (!r.errors) return `${r.ok}×200`;
  const first = r.causes
    .map(([c]) =>
      `${c.match(/^HTTP \d+/)?.[0] ?? c.slice(0, 40)} ${c.match(/"code":"(\w+)"/)?.[1] ?? ''}`.trim(),
    )
    .filter((c, i, all) => all.indexOf(c) === i);
  return `${r.ok}×200, ${r.errors} errors (${first.join('; ')})`;
};

/** The figures of one server: rows [server, measure, Loupe, bare pg]. */
async function measureServer(label: string, server: Target, adminOf: Target, largeCatalog: boolean) {
  const rows: string[][] = [];
  const firstErrors: string[] = [];
  /** Issue 43's targets apply to the stock server (JIT on); the embedded one is shown for comparison. */
  const overTarget: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok && largeCatalog) overTarget.push(`pg-first-read/${label}: ${what}`);
  };
  const row = (measure: string, loupe: string, bare: string) => {
    rows.push([label, measure, loupe, bare]);
    console.error(`pg-first-read: ${label}, ${measure}: ${loupe} | bare: ${bare}`);
  };
  const owner = new pg.Client(server);
  await owner.connect();
  await owner.query(SETUP);
  await owner.end();
  const admin = new pg.Client({ ...adminOf, database: server.database });
  await admin.connect();
  const pool = new pg.Pool({ ...server, max: 20 });
  pool.on('error', () => {}); // an idle client's end when the server stops
  const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-firstread-'));
  const adminKey = generateKey();
  const restoreEnv = snapshotEnv(LOCAL_RUNTIME_ENV);
  let app: LocalApp | undefined;
  const note = (calls: Call[]) => {
    for (const c of calls) if (c.error && firstErrors.length < 3) firstErrors.push(`${c.status}: ${c.error}`);
  };
  try {
    const started = await startWithPostgres(dataDir, adminKey, server);
    app = started.app;
    started.api.close();
    const { id } = started;
    // The service's base URL on 127.0.0.1 (app.url names localhost).
    const a = `http://127.0.0.1:${app.port}/v1`;
    let next = 1;
    const fresh = () => shape(next++);

    // 1. The first read of 10 new shapes, one after the other.
    const ten = Array.from({ length: 10 }, fresh);
    const loupe10: Call[] = [];
    for (const sql of ten) loupe10.push(await apiRead(a, adminKey, id, sql));
    note(loupe10);
    const drained1 = await drain(admin);
    const bare10: Call[] = [];
    for (const sql of ten) bare10.push(await bareRead(pool, sql));
    const fig = (c: Call[]) =>
      `median ${ms(median(c.map((x) => x.ms)))}, max ${ms(Math.max(...c.map((x) => x.ms)))} (${statuses(c)})`;
    row('first read of 10 new shapes', `${fig(loupe10)}; ${drained1}`, fig(bare10));
    const within = (c: Call[], medianMs: number, maxMs: number) =>
      c.every((x) => x.status === 200) &&
      median(c.map((x) => x.ms)) <= medianMs &&
      Math.max(...c.map((x) => x.ms)) <= maxMs;
    check(
      within(loupe10, 300, 1500),
      `first read of 10 new shapes: ${fig(loupe10)} (target median ≤ 300 ms, max ≤ 1.5 s, all 200)`,
    );

    // 2 and 3. 32 concurrent first reads, of one new shape and of 32 new shapes.
    for (const [what, sqls, limitMs] of [
      ['32 concurrent first reads, 1 shape', Array(CONCURRENT).fill(fresh()), 5000],
      ['32 concurrent first reads, 32 shapes', Array.from({ length: CONCURRENT }, fresh), 10_000],
    ] as [string, string[], number][]) {
      const t0 = performance.now();
      const loupe = await Promise.all(sqls.map((sql) => apiRead(a, adminKey, id, sql)));
      const wall = performance.now() - t0;
      note(loupe);
      const drained = await drain(admin);
      check(
        loupe.every((x) => x.status === 200) && wall <= limitMs && !drained.endsWith('(!)'),
        `${what}: ${statuses(loupe)}, wall ${ms(wall)}, ${drained} (target all 200 within ${limitMs / 1000} s, no active backend after 5 s)`,
      );
      const t1 = performance.now();
      const bare = await Promise.all(sqls.map((sql) => bareRead(pool, sql)));
      const bareWall = performance.now() - t1;
      row(
        what,
        `${statuses(loupe)}, wall ${ms(wall)}; ${drained}`,
        `${statuses(bare)}, wall ${ms(bareWall)}`,
      );
    }

    // 4. 32 clients for 10 s on one new shape.
    const sql = fresh();
    const loupeLoad = await loadClients({
      mode: 'api',
      url: `${a}/connections/${id}/query`,
      key: adminKey,
      body: { sql, maxRows: 100 },
      clients: CONCURRENT,
      seconds: LOAD_SECONDS,
      warmupSeconds: 0,
    });
    const drained4 = await drain(admin);
    const bareLoad = await loadClients({
      mode: 'pg',
      sql,
      pg: server,
      poolSize: 20,
      clients: CONCURRENT,
      seconds: LOAD_SECONDS,
      warmupSeconds: 0,
    });
    // p99 is null (NaN in JSON) when nothing answered 200.
    const load = (r: typeof loupeLoad) =>
      `${r.perSecond.toFixed(0)}/s, p99 ${r.p99 == null ? 'n/a' : ms(r.p99)} (${loadStatuses(r)})`;
    row(`32 clients × ${LOAD_SECONDS} s, 1 new shape`, `${load(loupeLoad)}; ${drained4}`, load(bareLoad));
    check(
      loupeLoad.perSecond >= 200 && !loupeLoad.errors,
      `32 clients: ${load(loupeLoad)} (target ≥ 200/s, all 200)`,
    );

    // 5. A large catalog: the first read of a new connection to a database of 3,000 tables and 300 views.
    if (largeCatalog) {
      const big = `${server.database}_catalog`;
      await admin.query(`DROP DATABASE IF EXISTS ${big}`);
      await admin.query(`CREATE DATABASE ${big} OWNER ${server.user}`);
      const bigAdmin = new pg.Client({ ...adminOf, database: big });
      await bigAdmin.connect();
      const t0 = performance.now();
      await bigAdmin.query(`SET ROLE ${server.user}`);
      await bigAdmin.query(SETUP);
      await bigAdmin.query(`DO $$ BEGIN
        FOR i IN 1..3000 LOOP
          EXECUTE format('CREATE TABLE t_%s (id int PRIMARY KEY, customer_id int, label text, amount numeric, at timestamptz)', i);
        END LOOP;
        FOR i IN 1..300 LOOP
          EXECUTE format('CREATE VIEW v_%s AS SELECT t.id, t.label, o.status FROM t_%s t JOIN orders o ON o.id = t.id', i, i);
        END LOOP;
      END $$`);
      await bigAdmin.end();
      const built = ((performance.now() - t0) / 1000).toFixed(1);
      const target = { ...server, database: big };
      const tc = performance.now();
      const created = await fetch(`${a}/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Large catalog',
          type: 'POSTGRES',
          host: target.host,
          port: target.port,
          database: target.database,
          username: target.user,
          password: target.password,
        }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const createdMs = performance.now() - tc;
      const body = (await created.json()) as { data?: { id: string } };
      if (created.status !== 201 || !body.data)
        throw new Error(`large catalog connection answered ${created.status}`);
      const firstSql = shape(127);
      const first = await apiRead(a, adminKey, body.data.id, firstSql);
      note([first]);
      const second = await apiRead(a, adminKey, body.data.id, firstSql);
      const drained5 = await drain(admin);
      check(
        first.status === 200 && first.ms <= 300,
        `3,000 tables + 300 views: first read ${ms(first.ms)} (${first.status}) (target ≤ 300 ms)`,
      );
      const bigPool = new pg.Pool({ ...target, max: 2 });
      bigPool.on('error', () => {});
      const bareFirst = await bareRead(bigPool, firstSql);
      await bigPool.end();
      row(
        `new connection, 3,000 tables + 300 views (built in ${built} s)`,
        `create ${ms(createdMs)} (${created.status}), first read ${ms(first.ms)} (${first.status}), again ${ms(second.ms)} (${second.status}); ${drained5}`,
        `new pool, first read ${ms(bareFirst.ms)} (${bareFirst.status})`,
      );
    }

    // 6. The field schema of the tests (PostGIS, hll, ip4r, … and owner code): a new connection's first
    // reads of 10 of its corpus statements.
    if (largeCatalog) {
      const field = `${server.database}_field`;
      await createFieldDatabase(
        { ...server, adminUser: adminOf.user, adminPassword: adminOf.password },
        field,
      );
      const created = await fetch(`${a}/connections`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Field schema',
          type: 'POSTGRES',
          host: server.host,
          port: server.port,
          database: field,
          username: server.user,
          password: server.password,
        }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const body = (await created.json()) as { data?: { id: string } };
      if (created.status !== 201 || !body.data)
        throw new Error(`field connection answered ${created.status}`);
      // Every twelfth statement of the corpus: tables, filters, joins, PostGIS, hll, semver, views …
      const sqls = FIELD_CORPUS.filter((_, i) => i % 12 === 0).slice(0, 10);
      const loupe: Call[] = [];
      for (const sql of sqls) loupe.push(await apiRead(a, adminKey, body.data.id, sql));
      note(loupe);
      const drained = await drain(admin);
      check(
        within(loupe, 300, 1500),
        `field schema, first reads: ${fig(loupe)} (target median ≤ 300 ms, max ≤ 1.5 s, all 200)`,
      );
      const fieldPool = new pg.Pool({ ...server, database: field, max: 2 });
      fieldPool.on('error', () => {});
      const bare: Call[] = [];
      for (const sql of sqls) bare.push(await bareRead(fieldPool, sql));
      await fieldPool.end();
      row(
        'new connection, field schema: first reads of 10 corpus statements',
        `${fig(loupe)}; ${drained}`,
        fig(bare),
      );
    }
  } finally {
    await app?.stop();
    await closeAllDrivers();
    restoreEnv();
    rmSync(dataDir, { recursive: true, force: true });
    await pool.end();
    await admin.end();
  }
  return { rows, firstErrors, overTarget };
}

export const pgFirstRead: BenchModule = {
  name: 'pg-first-read',
  description:
    'First reads of new statement shapes on the embedded PostgreSQL and on Debian’s PostgreSQL (JIT on): alone, 32 at once, under 32 clients, on a 3,000-table catalog and on the field schema; vs a bare pg.Pool',
  async run() {
    const rows: string[][] = [];
    const notes: string[] = [];
    const overTarget: string[] = [];
    const servers: [string, () => Promise<DbServer | undefined>, boolean][] = [
      ['embedded', startPostgres, false],
      ['stock (JIT on)', startStockPostgres, true],
    ];
    for (const [label, start, largeCatalog] of servers) {
      const db = await start();
      if (!db) {
        notes.push(
          `${label}: skipped, Debian's PostgreSQL is not installed (apt-get install postgresql-15).`,
        );
        continue;
      }
      try {
        const target = {
          host: db.host,
          port: db.port,
          database: db.database,
          user: db.user,
          password: db.password,
        };
        const adminOf = { ...target, user: db.adminUser, password: db.adminPassword };
        const r = await measureServer(label, target, adminOf, largeCatalog);
        rows.push(...r.rows);
        overTarget.push(...r.overTarget);
        if (r.firstErrors.length) notes.push(`${label}, first errors: ${r.firstErrors.join(' | ')}`);
      } finally {
        await db.stop();
      }
    }
    notes.push(
      `Shapes: GROUP BY over a different subset of orders' columns each (2,000 rows), customer 7; every shape is new to the connection when first read. Loupe: POST /v1/connections/{id}/query on the local runtime in this process (pool of 20); bare: a pg.Pool of 20 in this process. "idle after": how long until no backend named 'loupe' was active (bounded at ${DRAIN_LIMIT_MS / 1000} s), measured before the bare run; (!) when one was still active 5 s after the last answer.`,
      'Issue 43 targets on the stock server with JIT on: first read of 10 new shapes median ≤ 300 ms, none over 1.5 s; 32 concurrent first reads all 200 within 5 s (1 shape) and 10 s (32 shapes); 32 clients ≥ 200 requests/s, all 200; 3,000 tables + 300 views: inventory and first read add ≤ 300 ms.',
    );
    return { head: ['server', 'measure', 'Loupe API', 'bare pg.Pool'], rows, notes, overTarget };
  },
};
