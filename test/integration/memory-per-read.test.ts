/**
 * One read takes bounded memory: against the real local server (a child process of this test), the
 * resident memory of the server's process tree (the server and its SQLite processes) grows by less than
 * 200 MB while each huge-value statement runs, and each is answered 4xx with a clear code; a read of many
 * large rows (50 × 8 MB, under the 8 MiB value bound) answers its capped, truncated result growing the
 * tree by less than 100 MB, and eight at once by less than 300 MB (issue 32: one read holds its capped
 * result plus at most one row). Sampled from outside the server every 10 ms: memory, never time.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mariadbConnection, postgresConnection } from '../support/connections';
import { type SpawnedServer, spawnLocalServer, treeRssBytes } from '../support/spawned-server';

const MB = 1024 * 1024;
const GROWTH_LIMIT = 200 * MB;

describe.skipIf(process.platform !== 'linux')('memory one read may take, on the real local server', () => {
  let server: SpawnedServer;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    server = await spawnLocalServer(
      { LOUPE_DEMO_DATA: 'true', LOUPE_LOCAL_INSTANCES: '0', LOUPE_LOG_LEVEL: 'ERROR' },
      async (s) => {
        const r = await s.call('GET', '/connections');
        if (!r.ok) return false;
        const list = (await r.json()) as { data: { id: string; name: string; isActive: boolean }[] };
        const demo = list.data.find((c) => c.name === 'Demo SaaS (SQLite)' && c.isActive);
        if (demo) ids.SQLITE = demo.id;
        return !!demo;
      },
    );
    const create = async (body: Record<string, unknown>) => {
      const r = await server.call('POST', '/connections', body);
      const json = (await r.json()) as { data: { id: string } };
      expect(r.status, JSON.stringify(json)).toBe(201);
      return json.data.id;
    };
    ids.POSTGRES = await create(postgresConnection(inject('postgres'), { name: 'mem-pg' }));
    const maria = inject('mariadb');
    if (maria) ids.MARIADB = await create(mariadbConnection(maria, { name: 'mem-maria' }));
  }, 120_000);
  afterAll(() => server?.kill());

  /** Runs the statement and returns the answer with the peak growth of the tree's resident memory. */
  async function measured(type: string, sql: string) {
    const baseline = treeRssBytes(server.pid);
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRssBytes(server.pid));
    }, 10);
    try {
      const res = await server.call('POST', `/connections/${ids[type]}/query`, { sql }).catch((e) => {
        throw new Error(`${e}: ${server.output().slice(-3000)}`);
      });
      const body = (await res.json()) as { error: { code: string; message: string } | null };
      peak = Math.max(peak, treeRssBytes(server.pid));
      return { status: res.status, body, growth: peak - baseline };
    } finally {
      clearInterval(timer);
    }
  }

  const cases: [string, string][] = [
    ['SQLITE', 'SELECT zeroblob(450000000)'],
    ['SQLITE', 'SELECT length(randomblob(900000000))'],
    ['SQLITE', "SELECT printf('%.*c', 900000000, 'x')"],
    // 200 MB rather than the 500 MB of the review: PostgreSQL does not check for cancellation while
    // repeat() builds its value, and on a busy test machine 500 MB takes about as long as the request's
    // 29-second budget. Unbounded, 200 MB alone would grow the server by more than the limit.
    ['POSTGRES', "SELECT repeat('x', 200000000)"],
    ['MARIADB', "SELECT REPEAT('x', 500000000)"],
  ];
  it.each(cases)(
    '%s: %s grows memory < 200 MB and answers 4xx with a clear code',
    async (type, sql) => {
      if (!ids[type]) return; // MariaDB not installed here
      const r = await measured(type, sql);
      expect(r.status, JSON.stringify(r.body)).toBeGreaterThanOrEqual(400);
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
      expect(r.body.error?.code).toBe('VALUE_TOO_LARGE');
      expect(r.body.error?.message).not.toMatch(/undefined is not an object|UNKNOWN/);
      expect(r.growth, `grew ${Math.round(r.growth / MB)} MB`).toBeLessThan(GROWTH_LIMIT);
    },
    120_000,
  );

  /** Peak growth of the tree's resident memory while `work` runs. */
  async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
    const baseline = treeRssBytes(server.pid);
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRssBytes(server.pid));
    }, 10);
    try {
      const value = await work();
      peak = Math.max(peak, treeRssBytes(server.pid));
      return { value, growth: peak - baseline };
    } finally {
      clearInterval(timer);
    }
  }

  const manyLargeRows: [string, string][] = [
    ['POSTGRES', "select repeat('x', 8000000) from generate_series(1, 50)"],
    ['MARIADB', "SELECT REPEAT('x', 8000000) AS s FROM (SELECT seq FROM seq_1_to_50) g"],
  ];
  it.each(manyLargeRows)(
    '%s: 50 rows of 8 MB with maxRows 1000 answer 200, truncated at the byte cap, growing memory < 100 MB',
    async (type, sql) => {
      if (!ids[type]) return; // MariaDB not installed here
      const { value: res, growth } = await peakGrowth(async () => {
        const r = await server.call('POST', `/connections/${ids[type]}/query`, { sql, maxRows: 1000 });
        return {
          status: r.status,
          body: (await r.json()) as { data: { rowCount: number; truncated?: boolean } },
        };
      });
      expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
      expect(res.body.data.truncated).toBe(true);
      expect(res.body.data.rowCount).toBe(0);
      expect(growth, `grew ${Math.round(growth / MB)} MB`).toBeLessThan(100 * MB);
    },
    120_000,
  );

  it('eight such PostgreSQL reads at once grow memory < 300 MB, and the server still answers', async () => {
    const sql = "select repeat('x', 8000000) from generate_series(1, 50)";
    const { value: statuses, growth } = await peakGrowth(() =>
      Promise.all(
        Array.from({ length: 8 }, async () => {
          const r = await server.call('POST', `/connections/${ids.POSTGRES}/query`, { sql, maxRows: 1000 });
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(statuses).toEqual(Array(8).fill(200));
    expect(growth, `grew ${Math.round(growth / MB)} MB`).toBeLessThan(300 * MB);
    const ok = await server.call('POST', `/connections/${ids.POSTGRES}/query`, { sql: 'SELECT 1 AS one' });
    expect(ok.status).toBe(200);
  }, 120_000);

  it('four huge SQLite reads at once stay bounded too, and the server still answers', async () => {
    const baseline = treeRssBytes(server.pid);
    let peak = baseline;
    const timer = setInterval(() => {
      peak = Math.max(peak, treeRssBytes(server.pid));
    }, 10);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        server.call('POST', `/connections/${ids.SQLITE}/query`, { sql: 'SELECT zeroblob(450000000)' }),
      ),
    );
    clearInterval(timer);
    expect(answers.map((a) => a.status)).toEqual([422, 422, 422, 422]);
    expect(peak - baseline).toBeLessThan(GROWTH_LIMIT);
    const ok = await server.call('POST', `/connections/${ids.SQLITE}/query`, { sql: 'SELECT 1 AS one' });
    expect(ok.status).toBe(200);
  }, 120_000);
});
