import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { generateKey } from '../shared/auth/key-material';
import { type DbServer, startPostgres } from '../test/support/databases';
import { type ServerProcess, spawnServer } from '../test/support/server-process';
import type { BenchModule } from './context';

/** Issue 22: resident memory of the local server under a long run of varied requests. */
export const MEMORY_TARGETS = { growthMb: 100, lateGrowthMb: 25 };
const CLIENTS = 8;

/**
 * `--requests N` (default 100,000), `--warmup N` (default 5,000, at most a tenth of the requests: sent
 * before the start figure) and `--only-kind a,b` (bisecting: only these request kinds).
 */
function options() {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const requests = Number(get('--requests') ?? 100_000);
  if (!Number.isInteger(requests) || requests < 100) throw new Error('--requests must be an integer ≥ 100');
  const warmup = Number(get('--warmup') ?? Math.min(5000, Math.ceil(requests / 10)));
  if (!Number.isInteger(warmup) || warmup < 0) throw new Error('--warmup must be an integer ≥ 0');
  return { requests, warmup, kinds: get('--only-kind')?.split(',').filter(Boolean) };
}

const mb = (kb: number) => kb / 1024;

/** VmRSS and RssAnon of a process, kB (Linux). */
export function residentKb(pid: number): { rss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rss: field('VmRSS'), anon: field('RssAnon') };
}

interface Kind {
  name: string;
  method: string;
  /** Path and body for the i-th request of this kind. */
  make(i: number): { path: string; body?: unknown };
}

/** The varied reads: listings, single items, queries with distinct SQL texts, refused writes, documents. */
function kinds(ids: {
  pg: string;
  sqlite: string;
  dashboard: string;
  widget: string;
  saved: string;
  metric: string;
}): Kind[] {
  const get = (name: string, path: string): Kind => ({ name, method: 'GET', make: () => ({ path }) });
  return [
    get('root', '/'),
    get('connections', '/connections'),
    get('connection', `/connections/${ids.pg}`),
    get('schema', `/connections/${ids.pg}/schema`),
    get('history', `/connections/${ids.pg}/queries?pageSize=20`),
    {
      name: 'query-pg',
      method: 'POST',
      make: (i) => ({
        path: `/connections/${ids.pg}/query`,
        body: {
          sql: `SELECT region, COUNT(*) AS n${i % 5000} FROM bench_memory WHERE amount > ${i % 997} GROUP BY region`,
          maxRows: 50,
        },
      }),
    },
    {
      name: 'query-sqlite',
      method: 'POST',
      make: (i) => ({
        path: `/connections/${ids.sqlite}/query`,
        body: { sql: `SELECT ${i % 5000} AS n, name FROM sqlite_master LIMIT ${1 + (i % 20)}`, maxRows: 20 },
      }),
    },
    {
      name: 'refused-write',
      method: 'POST',
      make: (i) => ({
        path: `/connections/${ids.pg}/query`,
        body: { sql: `DELETE FROM bench_memory WHERE id = ${i}` },
      }),
    },
    get('dashboards', '/dashboards'),
    get('widget-data', `/dashboards/${ids.dashboard}/widgets/${ids.widget}/data`),
    get('saved-queries', '/saved-queries'),
    {
      name: 'saved-run',
      method: 'POST',
      make: () => ({ path: `/saved-queries/${ids.saved}/run`, body: {} }),
    },
    get('metric-value', `/metrics/${ids.metric}/value`),
    get('usage', '/usage'),
    get('workflows', '/workflows'),
    get('openapi', '/openapi.json'),
    get('not-found', `/connections/00000000-0000-4000-8000-000000000000`),
  ];
}

async function call(url: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, data: JSON.parse(text || '{}')?.data, text };
}

async function created(url: string, key: string, path: string, body: unknown): Promise<string> {
  const r = await call(url, key, 'POST', path, body);
  if (r.status !== 201) throw new Error(`POST ${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
  return r.data.id as string;
}

interface Sample {
  done: number;
  rss: number;
  anon: number;
}

/**
 * Sends `warmup` requests (every kind served at least once, caches filled, the heap at its working size),
 * then `total` more from CLIENTS loops, sampling the server's resident memory every 250 requests.
 */
async function drive(
  pid: number,
  total: number,
  warmup: number,
  send: (i: number) => Promise<{ kind: string; status: number }>,
) {
  const cold = residentKb(pid);
  const statuses = new Map<string, number>();
  const samples: Sample[] = [];
  const phase = async (count: number, offset: number, sample: boolean) => {
    let next = 0;
    let done = 0;
    const loop = async () => {
      while (next < count) {
        const i = offset + next++;
        const status = await send(i).catch(() => ({ kind: 'error', status: 0 }));
        const key = `${status.status} ${status.kind}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (++done % 250 === 0 && sample) samples.push({ done, ...residentKb(pid) });
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, loop));
    return done;
  };
  await phase(warmup, 0, false);
  samples.push({ done: 0, ...residentKb(pid) });
  const done = await phase(total, warmup, true);
  samples.push({ done, ...residentKb(pid) });
  return { cold, samples, statuses };
}

const at = (samples: Sample[], fraction: number, total: number) =>
  samples.reduce((best, s) =>
    Math.abs(s.done - fraction * total) < Math.abs(best.done - fraction * total) ? s : best,
  );

function figures(
  run: { cold: { rss: number }; samples: Sample[] },
  total: number,
  after: { rss: number; anon: number },
) {
  const { samples } = run;
  const start = samples[0];
  const peak = samples.reduce((a, b) => (b.rss > a.rss ? b : a));
  const q2 = at(samples, 0.25, total);
  const q4 = samples[samples.length - 1];
  return {
    cold: mb(run.cold.rss),
    start: mb(start.rss),
    peak: mb(peak.rss),
    end: mb(q4.rss),
    after: mb(after.rss),
    afterAnon: mb(after.anon),
    growth: mb(after.rss - start.rss),
    /** Resident memory at the end of each quarter. */
    quarters: [0.25, 0.5, 0.75, 1].map((q) => mb(at(samples, q, total).rss)),
    /** From the end of the first quarter to the end of the run: the warm-up is over by then. */
    late: mb(q4.rss - q2.rss),
  };
}

export const memory: BenchModule = {
  name: 'memory',
  description: `Resident memory of the local server (npm start, in its own process) under ${CLIENTS} clients of varied requests, vs a bare node:http server answering the same count`,
  async run() {
    const opts = options();
    const total = opts.requests;
    const database: DbServer = await startPostgres();
    const overTarget: string[] = [];
    const rows: string[][] = [];
    const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-memory-'));
    let server: ServerProcess | undefined;
    let bare: ServerProcess | undefined;
    try {
      const setup = new pg.Client({
        host: database.host,
        port: database.port,
        user: database.user,
        password: database.password,
        database: database.database,
      });
      await setup.connect();
      await setup.query(
        "CREATE TABLE bench_memory AS SELECT g AS id, (ARRAY['north','south','east','west'])[1 + g % 4] AS region, (g % 997) * 1.25 AS amount FROM generate_series(1, 2000) g",
      );
      await setup.end();

      const key = generateKey();
      server = await spawnServer('infra/local/server.ts', {
        PORT: '0',
        LOUPE_DATA_DIR: dataDir,
        LOUPE_ADMIN_KEY: key,
        LOUPE_LOG_LEVEL: 'SILENT',
        LOUPE_ORG_RATE_LIMIT: '100000000',
        LOUPE_LOCAL_INSTANCES: '0',
      });
      const url = server.url;
      const pgId = await created(url, key, '/connections', {
        name: 'Bench memory PostgreSQL',
        type: 'POSTGRES',
        host: database.host,
        port: database.port,
        database: database.database,
        username: database.user,
        password: database.password,
      });
      const conns = await call(url, key, 'GET', '/connections');
      const sqlite = (conns.data as { id: string; type: string }[]).find((c) => c.type === 'SQLITE')?.id;
      if (!sqlite) throw new Error('the demo SQLite connection is missing');
      const dashboard = await created(url, key, '/dashboards', { title: 'Bench memory' });
      const widget = await created(url, key, `/dashboards/${dashboard}/widgets`, {
        type: 'TABLE',
        title: 'regions',
        query: 'SELECT region, SUM(amount) AS total FROM bench_memory GROUP BY region',
        connectionId: pgId,
      });
      const saved = await created(url, key, '/saved-queries', {
        name: 'bench memory',
        query: 'SELECT id, amount FROM bench_memory ORDER BY id LIMIT 25',
        connectionId: pgId,
      });
      const metric = await created(url, key, '/metrics', {
        name: 'bench memory total',
        formula: 'SELECT SUM(amount) FROM bench_memory',
        connectionId: pgId,
      });
      const all = kinds({ pg: pgId, sqlite, dashboard, widget, saved, metric });
      const mix = opts.kinds ? all.filter((k) => opts.kinds!.includes(k.name)) : all;
      if (!mix.length) throw new Error(`--only-kind: known kinds ${all.map((k) => k.name).join(', ')}`);

      const pid = server.child.pid!;
      const run = await drive(pid, total, opts.warmup, async (i) => {
        const k = mix[i % mix.length];
        const { path, body } = k.make(i);
        return { kind: k.name, status: (await call(url, key, k.method, path, body)).status };
      });
      await new Promise((r) => setTimeout(r, 5000));
      const f = figures(run, total, residentKb(pid));
      const statuses = [...run.statuses]
        .filter(([s]) => !s.startsWith('200 '))
        .map(([s, n]) => `${n}× ${s}`)
        .join(', ');
      const over: string[] = [];
      if (f.growth >= MEMORY_TARGETS.growthMb)
        over.push(`grew ${f.growth.toFixed(0)} MB ≥ ${MEMORY_TARGETS.growthMb} MB`);
      if (f.late >= MEMORY_TARGETS.lateGrowthMb)
        over.push(`grew ${f.late.toFixed(0)} MB from the 2nd to the 4th quarter`);
      if ([...run.statuses.keys()].some((s) => s.startsWith('0 ') || s.startsWith('5')))
        over.push(`failed requests (${statuses})`);
      if (over.length) overTarget.push(`memory/local server: ${over.join(', ')}`);
      const row = (label: string, x: typeof f, note: string, target: string) =>
        rows.push([
          label,
          x.cold.toFixed(0),
          x.start.toFixed(0),
          x.peak.toFixed(0),
          x.end.toFixed(0),
          x.after.toFixed(0),
          x.growth.toFixed(0),
          x.late.toFixed(0),
          note,
          target,
        ]);
      row(
        'local server',
        f,
        `quarters ${f.quarters.map((q) => q.toFixed(0)).join('/')} MB; anon ${f.afterAnon.toFixed(0)} MB; ${statuses}`,
        over.length ? 'OVER TARGET' : 'ok',
      );

      bare = await spawnServer('bench/memory-bare.mjs', { PORT: '0' });
      const bareRun = await drive(bare.child.pid!, total, opts.warmup, async (i) => {
        const res = await fetch(`${bare!.url}/connections/x/query`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sql: `SELECT ${i}` }),
        });
        await res.text();
        return { kind: 'bare', status: res.status };
      });
      await new Promise((r) => setTimeout(r, 5000));
      const b = figures(bareRun, total, residentKb(bare.child.pid!));
      row('bare node:http server', b, `anon ${b.afterAnon.toFixed(0)} MB`, 'baseline');
      return {
        head: [
          'server',
          'cold MB',
          'start MB',
          'peak MB',
          'end MB',
          'after 5 s MB',
          'growth MB',
          'Q1→Q4 MB',
          'notes',
          'target',
        ],
        rows,
        notes: [
          `${total.toLocaleString('en')} requests (after ${opts.warmup.toLocaleString('en')} of warm-up) from ${CLIENTS} clients, round-robin over: ${mix.map((k) => k.name).join(', ')} (queries with distinct SQL texts). Resident memory (VmRSS of the server process): "cold" before the first request, "start" after the warm-up, sampled every 250 requests, "after" 5 s after the last answer.`,
          `Targets: growth (after − start) < ${MEMORY_TARGETS.growthMb} MB; from the end of the first quarter to the end of the run (Q1→Q4) < ${MEMORY_TARGETS.lateGrowthMb} MB (flat once warm). \`--requests N\` runs fewer, \`--warmup N\` changes the warm-up, \`--only-kind a,b\` bisects by request kind.`,
        ],
        overTarget,
      };
    } finally {
      await server?.stop();
      await bare?.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await database.stop();
    }
  },
};
