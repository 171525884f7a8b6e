/**
 * Issue 43 on Debian's PostgreSQL as shipped (JIT on, jit_above_cost 100000, PostGIS installed): many
 * first reads at once. The review saw 40 backends compile the catalog check with LLVM for minutes, every
 * answer fail, and the backends outlive Loupe's answers. Here, in open mode (the role reaches no escape)
 * and in strict mode (dblink installed), 32 concurrent first reads of one new shape and 32 of 32
 * different shapes all answer 200, and no backend of the login is still active shortly after the last
 * answer. Times are the bench's business (bench/pg-first-read.ts); this file asserts outcomes only.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import type { DbInfo } from '../support/global-setup';
import { startTestServer, type TestServer } from '../support/server';

const stock = inject('stockPostgres');
const suffix = `${process.pid}_${Date.now().toString(36)}`;

describe.skipIf(!stock)("many first reads at once on Debian's PostgreSQL with JIT on (issue 43)", () => {
  const info = stock as DbInfo;
  let s: TestServer;
  const ids: Record<'open' | 'strict', string> = { open: '', strict: '' };

  beforeAll(async () => {
    for (const mode of ['open', 'strict'] as const) {
      const db = `load_${mode}_${suffix}`;
      await createPostgresDatabase(info, db);
      await postgresAdmin(
        info,
        db,
        `CREATE EXTENSION postgis; ${mode === 'strict' ? 'CREATE EXTENSION dblink;' : ''}
         CREATE TABLE public.orders (id int PRIMARY KEY, customer_id int, status text, total numeric, placed_at timestamptz);
         INSERT INTO public.orders SELECT g, g % 50, (ARRAY['new','paid','shipped','cancelled'])[1 + g % 4], g * 1.5,
           timestamptz '2026-01-01' + g * interval '1 hour' FROM generate_series(1, 2000) g;
         CREATE INDEX ON public.orders (customer_id);
         ANALYZE public.orders;
         GRANT SELECT ON public.orders TO ${info.user};`,
      );
      ids[mode] = db;
    }
    // The organization's request limit (600 a minute by default) would answer 429 to a load test.
    s = await startTestServer({ env: { LOUPE_ORG_RATE_LIMIT: '1000000' } });
    for (const mode of ['open', 'strict'] as const)
      ids[mode] = await createConnection(s, postgresConnection(info, { database: ids[mode], name: mode }));
  });

  afterAll(async () => {
    await s?.stop();
  });

  /** Active backends of the login that Loupe opened (pg_stat_activity, seen by the superuser). */
  const activeBackends = async () =>
    (
      await postgresAdmin(
        info,
        'postgres',
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = '${info.user}' AND application_name = 'loupe' AND state = 'active'`,
      )
    )[0].n as number;

  /** Polls until no backend of the login is active, at most `ms`: answers the last count. */
  const settled = async (ms: number) => {
    const until = Date.now() + ms;
    let n = await activeBackends();
    while (n > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      n = await activeBackends();
    }
    return n;
  };

  for (const mode of ['open', 'strict'] as const) {
    it(`${mode} mode: 32 concurrent first reads of one new shape all answer 200, and leave no active backend`, async () => {
      const sql = `SELECT status, count(*) AS n, sum(total) AS total FROM orders WHERE customer_id = 7 /* ${mode} one shape */ GROUP BY status ORDER BY status`;
      const answers = await Promise.all(
        Array.from({ length: 32 }, () =>
          s.call('POST', `/connections/${ids[mode]}/query`, { body: { sql } }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(32).fill(200));
      expect(answers[0].body.data.rows.length).toBeGreaterThan(0);
      expect(await settled(5_000)).toBe(0);
    });

    it(`${mode} mode: 32 concurrent first reads of 32 different shapes all answer 200, and leave no active backend`, async () => {
      const answers = await Promise.all(
        Array.from({ length: 32 }, (_, i) =>
          s.call('POST', `/connections/${ids[mode]}/query`, {
            body: {
              sql: `SELECT status, count(*) AS n, max(placed_at) AS last FROM orders WHERE customer_id = ${i} AND total > ${i} GROUP BY status HAVING count(*) > ${i % 3} ORDER BY ${1 + (i % 2)}`,
            },
          }),
        ),
      );
      expect(answers.filter((a) => a.status !== 200).map((a) => a.text)).toEqual([]);
      expect(await settled(5_000)).toBe(0);
    });
  }

  it('32 clients reading one shape for 5 s: every answer 200 (the rate is in the bench)', async () => {
    const sql = 'SELECT status, count(*) AS n FROM orders WHERE customer_id = 9 GROUP BY status';
    const until = Date.now() + 5_000;
    const statuses = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        // Bounded in count as well as time.
        for (let i = 0; i < 2_000 && Date.now() < until; i++) {
          const r = await s.call('POST', `/connections/${ids.open}/query`, { body: { sql } });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    expect([...statuses.keys()]).toEqual([200]);
    expect(statuses.get(200)).toBeGreaterThan(32);
    expect(await settled(5_000)).toBe(0);
  });

  it('the read mode of each connection is the one expected', async () => {
    expect((await s.call('GET', `/connections/${ids.open}/read-safety`)).body.data.mode).toBe('open');
    expect((await s.call('GET', `/connections/${ids.strict}/read-safety`)).body.data.mode).toBe('strict');
  });
});
