import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type LocalApp, startLocal } from '../infra/local/app';
import { generateKey } from '../shared/auth/key-material';
import { closeAllDrivers } from '../shared/databases/drivers/index';
import { startPostgres } from '../test/support/databases';
import { type BenchModule, ms } from './context';
import { snapshotEnv } from './query';

/** Targets of issue 15 for 32 clients on `POST /v1/connections/{id}/query` (a small GROUP BY). */
export const LOAD_TARGETS = { perSecond: 300, p99Ms: 150 };
const CLIENTS = 32;
const POOL_SIZE = 20; // the service's default pool per database and instance (LOUPE_DB_POOL_SIZE)
const SQL =
  'SELECT region, COUNT(*) AS orders, ROUND(SUM(amount), 2) AS total FROM bench_orders GROUP BY region ORDER BY region';

interface ClientResult {
  mode: string;
  seconds: number;
  ok: number;
  errors: number;
  causes: [string, number][];
  perSecond: number;
  p50: number;
  p99: number;
  cpuMs: number;
}

/** `--seconds N` (default 15) and `--instances a,b` (default: LOUPE_LOCAL_INSTANCES or the runtime's default). */
function options() {
  const argv = process.argv.slice(2);
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const seconds = Number(get('--seconds') ?? 15);
  if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
  const list = get('--instances');
  const instances = list
    ? list.split(',').map((s) => {
        const n = Number(s);
        if (!Number.isInteger(n) || n < 0) throw new Error('--instances takes counts ≥ 0 (0 = in-process)');
        return n;
      })
    : [undefined];
  return { seconds, instances };
}

/** Runs the load clients in their own process and returns what they measured. */
function runClients(args: Record<string, unknown>): Promise<ClientResult> {
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

const TICK_MS = 1000 / 100; // USER_HZ
/** CPU time (ms) of the processes descending from `root` (PostgreSQL's server and backends), `skip` excluded. */
function descendantsCpuMs(root: number, skip: Set<number>): number {
  const parent = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(name), Number(f[1]));
      cpu.set(Number(name), (Number(f[11]) + Number(f[12])) * TICK_MS);
    } catch {}
  }
  let total = 0;
  for (const [pid, ms] of cpu) {
    if (skip.has(pid)) continue;
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (skip.has(p)) break;
      if (p === root) {
        total += ms;
        break;
      }
    }
  }
  return total;
}

const usMs = (u: { user: number; system: number }) => (u.user + u.system) / 1000;

export const load: BenchModule = {
  name: 'load',
  description: `Throughput under load: ${CLIENTS} clients on POST /v1/connections/{id}/query (a small GROUP BY) vs a bare pg.Pool on the same embedded PostgreSQL, clients in their own process`,
  async run() {
    const opts = options();
    const database = await startPostgres();
    const pgOptions = {
      host: database.host,
      port: database.port,
      user: database.user,
      password: database.password,
      database: database.database,
    };
    const setup = new pg.Client(pgOptions);
    await setup.connect();
    await setup.query(
      "CREATE TABLE bench_orders AS SELECT g AS id, (ARRAY['north','south','east','west','central'])[1 + g % 5] AS region, (g % 997) * 1.25 AS amount FROM generate_series(1, 2000) g",
    );
    await setup.end();
    const rows: string[][] = [];
    const notes: string[] = [];
    const overTarget: string[] = [];
    const restoreEnv = snapshotEnv([
      'LOUPE_ADMIN_KEY',
      'LOUPE_DEMO_DATA',
      'LOUPE_LOG_LEVEL',
      'LOUPE_ORG_RATE_LIMIT',
      'LOUPE_DATA_DIR',
      'LOUPE_RUNTIME',
      'LOUPE_DYNAMODB_ENDPOINT',
    ]);
    const row = (label: string, r: ClientResult, cpu: string, target: string) =>
      rows.push([label, r.perSecond.toFixed(0), ms(r.p50), ms(r.p99), String(r.errors), cpu, target]);
    try {
      for (const instances of opts.instances) {
        const dataDir = mkdtempSync(join(tmpdir(), 'loupe-bench-load-'));
        const adminKey = generateKey();
        let app: LocalApp | undefined;
        try {
          app = await startLocal({
            port: 0,
            dataDir,
            instances,
            env: {
              LOUPE_ADMIN_KEY: adminKey,
              LOUPE_DEMO_DATA: 'false',
              LOUPE_LOG_LEVEL: 'SILENT',
              // 32 clients send thousands of requests a minute: the org limit (still counted on every
              // request in the shared store) must not answer 429.
              LOUPE_ORG_RATE_LIMIT: '100000000',
            },
            log: () => {},
          });
          const created = await fetch(`${app.url}/connections`, {
            method: 'POST',
            headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              name: 'Bench PostgreSQL',
              type: 'POSTGRES',
              host: pgOptions.host,
              port: pgOptions.port,
              database: pgOptions.database,
              username: pgOptions.user,
              password: pgOptions.password,
            }),
          });
          const text = await created.text();
          if (created.status !== 201)
            throw new Error(`create connection answered ${created.status}: ${text}`);
          const body = JSON.parse(text) as { data: { id: string } };
          const url = `${app.url}/connections/${body.data.id}/query`;

          const main0 = process.threadCpuUsage();
          const proc0 = process.cpuUsage();
          const inst0 = await app.instancesCpuUsage?.();
          const clientsPid = new Set<number>();
          const pg0 = descendantsCpuMs(process.pid, clientsPid);
          const r = await runClients({
            mode: 'api',
            url,
            key: adminKey,
            body: { sql: SQL, maxRows: 100 },
            clients: CLIENTS,
            seconds: opts.seconds,
          });
          const mainMs = usMs(process.threadCpuUsage(main0));
          const procMs = usMs(process.cpuUsage(proc0));
          const instMs =
            inst0 && app.instancesCpuUsage ? usMs(await app.instancesCpuUsage()) - usMs(inst0) : undefined;
          // PostgreSQL's processes; the short-lived load-client process has exited and is not a descendant any more.
          const pgMs = descendantsCpuMs(process.pid, clientsPid) - pg0;
          const per = (x: number) => `${(x / Math.max(1, r.ok)).toFixed(2)}`;
          const n = app.instances;
          const label = n
            ? `API, ${n} instance${n > 1 ? 's' : ''} (worker threads)`
            : 'API, in-process (1 thread)';
          const cpu =
            instMs === undefined
              ? `service+store ${per(mainMs)}, other threads ${per(procMs - mainMs)}, PostgreSQL ${per(pgMs)}, clients ${per(r.cpuMs)}`
              : `service ${per(instMs)}, store ${per(mainMs)}, other threads ${per(procMs - mainMs - instMs)}, PostgreSQL ${per(pgMs)}, clients ${per(r.cpuMs)}`;
          const over: string[] = [];
          if (r.perSecond < LOAD_TARGETS.perSecond)
            over.push(`${r.perSecond.toFixed(0)}/s < ${LOAD_TARGETS.perSecond}/s`);
          if (r.p99 >= LOAD_TARGETS.p99Ms) over.push(`p99 ${ms(r.p99)} ≥ ${LOAD_TARGETS.p99Ms} ms`);
          if (r.errors)
            over.push(`${r.errors} errors (${r.causes.map(([c, k]) => `${k}× ${c}`).join('; ')})`);
          if (over.length) overTarget.push(`load/${label}: ${over.join(', ')}`);
          row(label, r, cpu, over.length ? 'OVER TARGET' : 'ok');
        } finally {
          await app?.stop();
          await closeAllDrivers();
          restoreEnv();
          rmSync(dataDir, { recursive: true, force: true });
        }
      }
      const bare = await runClients({
        mode: 'pg',
        sql: SQL,
        pg: pgOptions,
        poolSize: POOL_SIZE,
        clients: CLIENTS,
        seconds: opts.seconds,
      });
      row(
        `bare pg.Pool (${POOL_SIZE} connections), in the client process`,
        bare,
        `client process ${(bare.cpuMs / Math.max(1, bare.ok)).toFixed(2)}`,
        'baseline',
      );
      notes.push(
        `${CLIENTS} keep-alive clients for ${opts.seconds} s each (after 1 s of warm-up), in a separate Node process; ${availableParallelism()} cores. The SQL: ${SQL} (5 rows of 2,000).`,
        `Targets: ≥ ${LOAD_TARGETS.perSecond} requests/s, p99 < ${LOAD_TARGETS.p99Ms} ms, no errors. CPU columns are milliseconds of CPU per answered request: "service" the handler instances' threads (worker.cpuUsage), "store" the main thread (dynalite's validation and actions, the local queue and scheduler), "other threads" the rest of this process (V8 GC and compiler, libuv's pool with LevelDB), PostgreSQL its server processes, clients the load process.`,
        'The org rate limit is raised for the run (LOUPE_ORG_RATE_LIMIT) so that it never answers 429; each instance still leases its admissions from the shared count (one conditional write per lease, leases growing to a tenth of the limit).',
      );
      return {
        head: ['side', 'requests/s', 'p50', 'p99', 'errors', 'CPU ms per request', 'target'],
        rows,
        notes,
        overTarget,
      };
    } finally {
      await database.stop();
    }
  },
};
