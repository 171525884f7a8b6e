import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { runReadOnly } from '../../shared/databases/run';
import { failure, refusesEach } from '../support/drivers';

const db = inject('postgres');
const suffix = `${process.pid}_${Date.now().toString(36)}`;
const T = `drv_pg_items_${suffix}`;
const P = `drv_pg_parent_${suffix}`;
const SECRET = `drv_pg_secret_${suffix}`;
const SEQ = `drv_pg_seq_${suffix}`;

const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
  id: `pg-${suffix}`,
  version: '1',
  type: 'POSTGRES',
  host: db.host,
  port: db.port,
  database: db.database,
  username: db.user,
  password: db.password,
  sslEnabled: false,
  ...over,
});

let admin: pg.Client;
const count = async (table = T) =>
  Number((await admin.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

beforeAll(async () => {
  admin = new pg.Client({
    host: db.host,
    port: db.port,
    database: db.database,
    user: db.adminUser,
    password: db.adminPassword,
  });
  await admin.connect();
  await admin.query(`CREATE TABLE ${P} (id int PRIMARY KEY, label text)`);
  await admin.query(`CREATE TABLE ${T} (
    id serial PRIMARY KEY, parent_id int REFERENCES ${P}(id), big bigint, amount numeric(30,10),
    created timestamptz, day date, local_ts timestamp, payload jsonb, raw bytea, tags text[], span interval)`);
  await admin.query(`INSERT INTO ${P} VALUES (1, 'one')`);
  await admin.query(
    `INSERT INTO ${T} (parent_id, big, amount, created, day, local_ts, payload, raw, tags, span)
     SELECT 1, 9007199254740993 + g, 12345678901234567890.0123456789, '2024-03-01T10:20:30.123456Z', '2024-03-01',
            '2024-03-01 10:20:30.5', '{"a": [1, {"b": true}]}', '\\x0102ff', ARRAY['x','y'], interval '1 day 2 hours'
     FROM generate_series(1, 30) g`,
  );
  await admin.query(`CREATE TABLE ${SECRET} (id int)`);
  await admin.query(`CREATE SEQUENCE ${SEQ}`);
  await admin.query(`GRANT SELECT ON ${P}, ${T} TO ${db.user}`);
  await admin.query(`GRANT USAGE ON SEQUENCE ${SEQ} TO ${db.user}`);
  await admin.query(`REVOKE ALL ON ${SECRET} FROM ${db.user}`);
});

afterAll(async () => {
  await closeAllDrivers();
  await admin.query(`DROP TABLE IF EXISTS ${T}, ${P}, ${SECRET}`);
  await admin.query(`DROP SEQUENCE IF EXISTS ${SEQ}`);
  await admin.end();
});

describe('PostgreSQL driver', () => {
  it('pings and reports the server version', async () => {
    const d = await driverFor(target());
    const r = await d.ping();
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(r.serverVersion).toMatch(/^\d+/);
  });

  it('returns values as JSON that keeps their meaning', async () => {
    const r = await runReadOnly(
      target(),
      `SELECT big, amount, created, day, local_ts, payload, raw, tags, span FROM ${T} ORDER BY id LIMIT 1`,
    );
    expect(r.columns).toEqual([
      'big',
      'amount',
      'created',
      'day',
      'local_ts',
      'payload',
      'raw',
      'tags',
      'span',
    ]);
    expect(r.rows[0]).toEqual({
      big: '9007199254740994',
      amount: '12345678901234567890.0123456789',
      created: '2024-03-01T10:20:30.123456Z',
      day: '2024-03-01',
      local_ts: '2024-03-01T10:20:30.5',
      payload: { a: [1, { b: true }] },
      raw: Buffer.from([1, 2, 255]).toString('base64'),
      tags: ['x', 'y'],
      span: 'P1DT2H',
    });
    expect(r.rowCount).toBe(1);
    expect(r.truncated).toBeUndefined();
  });

  it('binds $1 parameters instead of splicing them into the text', async () => {
    const r = await runReadOnly(target(), `SELECT count(*) AS n FROM ${T} WHERE parent_id = $1 AND id > $2`, {
      params: [1, 25],
    });
    expect(r.rows).toEqual([{ n: '5' }]);
    const none = await runReadOnly(target(), `SELECT count(*) AS n FROM ${T} WHERE $1::text = 'x'`, {
      params: ["x' OR '1'='1"],
    });
    expect(none.rows).toEqual([{ n: '0' }]);
  });

  it('stops at maxRows and marks the result truncated', async () => {
    const r = await runReadOnly(target(), `SELECT id FROM ${T} ORDER BY id`, { maxRows: 7 });
    expect(r.rows.map((x) => x.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(r.truncated).toBe(true);
    const exact = await runReadOnly(target(), `SELECT id FROM ${T} ORDER BY id`, { maxRows: 30 });
    expect(exact.rows).toHaveLength(30);
    expect(exact.truncated).toBeUndefined();
  });

  it('reads a huge result through a cursor without loading it (row cap)', async () => {
    const r = await runReadOnly(target(), 'SELECT g FROM generate_series(1, 50000000) g', { maxRows: 10 });
    expect(r.rows).toHaveLength(10);
    expect(r.truncated).toBe(true);
  });

  it('stops at the byte cap and marks the result truncated', async () => {
    const r = await runReadOnly(target(), `SELECT repeat('x', 1000) AS s FROM generate_series(1, 100)`, {
      maxBytes: 10_000,
    });
    expect(r.rows.length).toBeGreaterThan(0);
    expect(r.rows.length).toBeLessThan(10);
    expect(r.truncated).toBe(true);
  });

  it('keeps duplicate column names apart', async () => {
    const r = await runReadOnly(target(), 'SELECT 1 AS a, 2 AS a, 3 AS a_2');
    expect(r.columns).toEqual(['a', 'a_3', 'a_2']);
    expect(r.rows[0]).toEqual({ a: 1, a_3: 2, a_2: 3 });
  });

  it('runs VALUES, EXPLAIN, SHOW and WITH … SELECT', async () => {
    expect((await runReadOnly(target(), 'VALUES (1, 2), (3, 4)')).rows).toEqual([
      { column1: 1, column2: 2 },
      { column1: 3, column2: 4 },
    ]);
    const ex = await runReadOnly(target(), `EXPLAIN SELECT * FROM ${T}`);
    expect(ex.columns).toEqual(['QUERY PLAN']);
    expect((await runReadOnly(target(), 'SHOW TimeZone')).rows).toHaveLength(1);
    expect((await runReadOnly(target(), 'WITH x AS (SELECT 2 AS v) SELECT v FROM x')).rows).toEqual([
      { v: 2 },
    ]);
  });

  it('maps a statement timeout to 504 QUERY_TIMEOUT', async () => {
    const e = await failure(
      runReadOnly(
        target(),
        'SELECT count(*) FROM generate_series(1, 100000000) a, generate_series(1, 1000) b',
        {
          timeoutMs: 300,
        },
      ),
    );
    expect(e.status).toBe(504);
    expect(e.code).toBe('QUERY_TIMEOUT');
    // The pooled connection is usable afterwards.
    expect((await runReadOnly(target(), 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('maps a rejected statement to 422 QUERY_FAILED with the code and position', async () => {
    const e = await failure(runReadOnly(target(), `SELECT nope FROM ${T}`));
    expect(e.status).toBe(422);
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.message).toContain('column "nope" does not exist');
    expect(e.details).toMatchObject({ code: '42703', position: 8 });
  });

  it('reports the statement’s own error, not the pipelined FETCH behind it, and the pool stays usable', async () => {
    // Rejected at DECLARE (the FETCH sent with it fails as well, unreported) and at FETCH time.
    for (const [sql, code] of [
      [`SELECT nope FROM ${T}`, '42703'],
      ['SELECT 1 / (g - 3) FROM generate_series(1, 5) g', '22012'],
      ['SELECT $1::int AS n', '22P02'],
    ] as const) {
      const e = await failure(runReadOnly(target(), sql, { params: sql.includes('$1') ? ['x'] : [] }));
      expect(e.code).toBe('QUERY_FAILED');
      expect(e.details).toMatchObject({ code });
    }
    const results = await Promise.all(
      [1, 2, 3, 4, 5, 6].map((n) => runReadOnly(target(), 'SELECT $1::int AS n', { params: [n] })),
    );
    expect(results.map((r) => r.rows)).toEqual([1, 2, 3, 4, 5, 6].map((n) => [{ n }]));
  });

  it('maps a missing privilege at query time to 422 QUERY_FAILED (42501)', async () => {
    const e = await failure(runReadOnly(target(), `SELECT * FROM ${SECRET}`));
    expect(e.code).toBe('QUERY_FAILED');
    expect(e.details).toMatchObject({ code: '42501' });
  });

  it('introspects tables, columns, keys and row estimates, skipping system schemas and unreadable tables', async () => {
    await admin.query(`ANALYZE ${T}`);
    const d = await driverFor(target());
    const s = await d.introspect();
    const t = s.tables.find((x) => x.name === T);
    expect(t).toBeDefined();
    expect(t?.schema).toBe('public');
    expect(t?.kind).toBe('table');
    expect(t?.primaryKey).toEqual(['id']);
    expect(t?.rowEstimate).toBe(30);
    expect(t?.columns.find((c) => c.name === 'amount')).toEqual({
      name: 'amount',
      type: 'numeric(30,10)',
      nullable: true,
      primaryKey: false,
    });
    expect(t?.columns.find((c) => c.name === 'id')).toMatchObject({ nullable: false, primaryKey: true });
    expect(t?.foreignKeys).toEqual([
      { columns: ['parent_id'], referencedTable: P, referencedColumns: ['id'] },
    ]);
    expect(s.tables.some((x) => x.name === SECRET)).toBe(false);
    expect(s.tables.some((x) => x.schema === 'pg_catalog' || x.schema === 'information_schema')).toBe(false);
  });

  it('reuses the pool for the same version and rebuilds it when the version changes', async () => {
    const a = await driverFor(target());
    const b = await driverFor(target());
    expect(b).toBe(a);
    const c = await driverFor(target({ version: '2' }));
    expect(c).not.toBe(a);
    expect((await c.ping()).serverVersion).toBeTruthy();
  });
});

describe('PostgreSQL read-only enforcement (every attempt leaves the database unchanged)', () => {
  const attempts: [string, string][] = [
    ['DELETE', `DELETE FROM ${T}`],
    ['UPDATE', `UPDATE ${T} SET big = 0`],
    ['INSERT', `INSERT INTO ${T} (big) VALUES (1)`],
    ['DROP', `DROP TABLE ${T}`],
    ['TRUNCATE', `TRUNCATE ${T}`],
    ['stacked with a comment', `SELECT 1; -- x\nDROP TABLE ${T}`],
    ['stacked after a backslash string', `SELECT '\\'; DELETE FROM ${T}; --'`],
    ['data-modifying CTE', `WITH d AS (DELETE FROM ${T} RETURNING *) SELECT count(*) FROM d`],
    ['SELECT INTO', `SELECT * INTO drv_pg_copy_${suffix} FROM ${T}`],
    ['FOR UPDATE', `SELECT * FROM ${T} FOR UPDATE`],
    ['EXPLAIN ANALYZE of a write', `EXPLAIN ANALYZE DELETE FROM ${T}`],
    ['nextval', `SELECT nextval('${SEQ}')`],
    ['setval', `SELECT setval('${SEQ}', 100)`],
    ['set_config', `SELECT set_config('statement_timeout', '0', false)`],
    ['pg_sleep', 'SELECT pg_sleep(5)'],
    ['quoted pg_sleep', 'SELECT "pg_sleep"(5)'],
    ['advisory lock', 'SELECT pg_advisory_lock(42)'],
    ['COMMIT then write', `COMMIT; DELETE FROM ${T}`],
    ['dollar-quoted trick', `SELECT $$ $$; DELETE FROM ${T}; SELECT $$ $$`],
    ['query_to_xml runs hidden SQL', `SELECT query_to_xml('DELETE FROM ${T}', true, true, '')`],
    ['CALL', 'CALL do_something()'],
    ['COPY', `COPY ${T} TO '/tmp/x'`],
    ['SET', 'SET default_transaction_read_only = off'],
  ];
  refusesEach(attempts, target, count, 30);

  it('leaves the sequence and tables untouched after all attempts', async () => {
    const seq = await admin.query(`SELECT last_value, is_called FROM ${SEQ}`);
    expect(seq.rows[0].is_called).toBe(false);
    const copy = await admin.query(`SELECT to_regclass('drv_pg_copy_${suffix}') AS r`);
    expect(copy.rows[0].r).toBeNull();
  });

  it('the read-only transaction stops a write even when the guard is bypassed', async () => {
    const d = await driverFor(target());
    await expect(
      d.query(`DELETE FROM ${T}`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000, kind: 'show' }),
    ).rejects.toMatchObject({ code: '25006' });
    await expect(
      d.query(`SELECT nextval('${SEQ}')`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000 }),
    ).rejects.toMatchObject({ code: '25006' });
    await expect(
      d.query(`SELECT 1; DELETE FROM ${T}`, { maxRows: 10, maxBytes: 1e6, timeoutMs: 5000, kind: 'show' }),
    ).rejects.toMatchObject({ code: '42601' });
    expect(await count()).toBe(30);
  });
});

describe('PostgreSQL schema sync is bounded', () => {
  it('reads at most maxColumns columns: the table they cut and those after it are left out, whole', async () => {
    const name = `drv_pg_bound_${suffix}`;
    const { createPostgresDatabase, postgresAdmin } = await import('../support/connections');
    await createPostgresDatabase(db, name);
    const cols = Array.from({ length: 10 }, (_, i) => `c${i} int`).join(', ');
    await postgresAdmin(
      db,
      name,
      `${['a', 'b', 'c', 'd', 'e'].map((t) => `CREATE TABLE t_${t} (${cols});`).join('\n')}
       GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${db.user};`,
    );
    const d = await driverFor(target({ id: `bound-${suffix}`, database: name }));
    const cut = await d.introspect({ maxColumns: 25 });
    expect(cut.tables.map((t) => [t.name, t.columns.length])).toEqual([
      ['t_a', 10],
      ['t_b', 10],
    ]);
    const all = await d.introspect();
    expect(all.tables.map((t) => t.name)).toEqual(['t_a', 't_b', 't_c', 't_d', 't_e']);
  });
});
