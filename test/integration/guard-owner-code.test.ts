import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import { mcpClient } from '../support/mcp';
import { type PathAnswer, type ReadPath, readPaths } from '../support/read-paths';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Issue 32: no code the database owner wrote runs through a read unless the connection's admin
 * allowed it by name. An ordinary owner role (the connection's own login, as in the review) writes
 * `mark(note)`, an IMMUTABLE plpgsql function that commits a row to a marker table through
 * dblink_exec (an independent session: the row stays whatever the read's transaction does), and hides
 * it where a read runs it without calling it by name: operators before ANY/ALL/SOME, an operator in
 * another schema, operators and a function duplicating built-ins' signatures on a role search_path
 * that puts public before pg_catalog, a view and a view of it, a domain's CHECK, an implicit cast, a
 * row-level security policy, an owner aggregate, and expressions the planner folds (an index
 * expression, extended statistics, a partition key, a CHECK constraint with constraint_exclusion on).
 * Each hostile statement is first shown to write when the owner runs it in a READ ONLY transaction;
 * through every read path it is refused (or, for the shadowing ones, runs the built-in) and the
 * marker table is read back unchanged after each.
 */
const DB = `guard_code_${process.pid}`;

describe('PostgreSQL owner code reachable without a call by name (issue 32)', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let mcp: Awaited<ReturnType<typeof mcpClient>>;
  let connectionId: string;
  let dashboardId: string;
  let paths: ReadPath[];
  const conninfo = `host=${info.host} port=${info.port} dbname=${DB} user=${info.user} password=${info.password}`;

  const marks = async () =>
    (await postgresAdmin(info, DB, 'SELECT count(*)::int AS n FROM public.marker'))[0].n as number;

  /** Runs `sql` as the owner in a READ ONLY transaction of a new session (the role's settings apply). */
  const direct = async (sql: string) => {
    const c = new pg.Client({
      host: info.host,
      port: info.port,
      user: info.user,
      password: info.password,
      database: DB,
    });
    await c.connect();
    try {
      await c.query('BEGIN READ ONLY');
      await c.query(sql);
      await c.query('ROLLBACK');
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    // dblink is not a trusted extension: the server's administrator installs it, as in the review.
    await postgresAdmin(info, DB, 'CREATE EXTENSION dblink');
    await postgresAdmin(
      info,
      DB,
      `ALTER ROLE ${info.user} IN DATABASE ${DB} SET search_path = public, pg_catalog;
       ALTER ROLE ${info.user} IN DATABASE ${DB} SET constraint_exclusion = on`,
    );
    const owner = new pg.Client({
      host: info.host,
      port: info.port,
      user: info.user,
      password: info.password,
      database: DB,
    });
    await owner.connect();
    // Everything inside the functions is qualified: index builds run them with a restricted search_path.
    await owner.query(`
      CREATE TABLE public.marker (note text, at timestamptz DEFAULT pg_catalog.now());
      CREATE FUNCTION public.mark(note text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          PERFORM public.dblink_exec('${conninfo}',
            pg_catalog.format('INSERT INTO public.marker(note) VALUES (%L)', note));
          RETURN 1;
        END $$;
    `);
    // Separately committed: the marker table must exist for the other session dblink opens.
    await owner.query(`
      CREATE FUNCTION public.mark_op(a int, b int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('operator') OPERATOR(pg_catalog.=) 1; END $$;
      CREATE OPERATOR public.<%%> (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mark_op);
      CREATE SCHEMA hidden;
      CREATE OPERATOR hidden.### (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mark_op);
      -- Duplicates of built-ins' signatures (issue 32, point 3), first on the role's search_path.
      CREATE FUNCTION public.text_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('text =') OPERATOR(pg_catalog.=) 1 AND a OPERATOR(pg_catalog.=) b; END $$;
      CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.text_eq);
      CREATE FUNCTION public.int_le(a int, b int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('int <=') OPERATOR(pg_catalog.=) 1 AND a OPERATOR(pg_catalog.<=) b; END $$;
      CREATE OPERATOR public.<= (LEFTARG = int, RIGHTARG = int, FUNCTION = public.int_le);
      CREATE FUNCTION public.int_ge(a int, b int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('int >=') OPERATOR(pg_catalog.=) 1 AND a OPERATOR(pg_catalog.>=) b; END $$;
      CREATE OPERATOR public.>= (LEFTARG = int, RIGHTARG = int, FUNCTION = public.int_ge);
      CREATE FUNCTION public.int_eq(a int, b int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('int =') OPERATOR(pg_catalog.=) 1 AND a OPERATOR(pg_catalog.=) b; END $$;
      CREATE OPERATOR public.= (LEFTARG = int, RIGHTARG = int, FUNCTION = public.int_eq);
      CREATE FUNCTION public.lower(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('lower'); RETURN pg_catalog.lower(t); END $$;
      CREATE TABLE public.t (id int PRIMARY KEY, name text);
      INSERT INTO public.t VALUES (1, 'a'), (2, 'b'), (3, 'c');
      -- Views (and a view of a view), a domain, an implicit cast, a policy, an aggregate.
      CREATE VIEW public.v AS SELECT id, public.mark('view') AS m FROM public.t;
      CREATE VIEW public.vv AS SELECT id, m FROM public.v;
      CREATE DOMAIN public.checked AS text CHECK (public.mark('domain') OPERATOR(pg_catalog.=) 1);
      CREATE TYPE public.pair AS (a int);
      CREATE FUNCTION public.pair_to_int(p public.pair) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('cast'); END $$;
      CREATE CAST (public.pair AS int) WITH FUNCTION public.pair_to_int(public.pair) AS IMPLICIT;
      CREATE TABLE public.guarded (id int);
      INSERT INTO public.guarded VALUES (1);
      ALTER TABLE public.guarded ENABLE ROW LEVEL SECURITY;
      ALTER TABLE public.guarded FORCE ROW LEVEL SECURITY;
      CREATE POLICY p ON public.guarded FOR SELECT USING (public.mark('policy') OPERATOR(pg_catalog.=) 1);
      -- A policy that reads a view: the view's function runs too.
      CREATE TABLE public.guarded_sub (id int);
      INSERT INTO public.guarded_sub VALUES (1);
      ALTER TABLE public.guarded_sub ENABLE ROW LEVEL SECURITY;
      ALTER TABLE public.guarded_sub FORCE ROW LEVEL SECURITY;
      CREATE POLICY q ON public.guarded_sub FOR SELECT
        USING (EXISTS (SELECT 1 FROM public.v WHERE v.m OPERATOR(pg_catalog.=) guarded_sub.id));
      -- A policy written with public first on the path: its IN applies the owner's =(int, int).
      CREATE TABLE public.guarded_eq (id int);
      INSERT INTO public.guarded_eq VALUES (1);
      ALTER TABLE public.guarded_eq ENABLE ROW LEVEL SECURITY;
      ALTER TABLE public.guarded_eq FORCE ROW LEVEL SECURITY;
      CREATE POLICY e ON public.guarded_eq FOR SELECT USING (id IN (1, 2));
      -- Row security that does not apply to the owner (not forced): its policy never runs for this role.
      CREATE TABLE public.owned_rls (id int);
      INSERT INTO public.owned_rls VALUES (1);
      ALTER TABLE public.owned_rls ENABLE ROW LEVEL SECURITY;
      CREATE POLICY o ON public.owned_rls FOR SELECT USING (public.mark('owned rls') OPERATOR(pg_catalog.=) 1);
      CREATE FUNCTION public.agg_step(s int, x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('aggregate') OPERATOR(pg_catalog.+) s; END $$;
      CREATE AGGREGATE public.marked_sum(int) (SFUNC = public.agg_step, STYPE = int, INITCOND = '0');
      -- Expressions the planner folds on every read of the table (IMMUTABLE, constant arguments).
      CREATE TABLE public.folded_index (id int);
      CREATE INDEX folded_idx ON public.folded_index ((id OPERATOR(pg_catalog.+) public.mark('index')));
      CREATE TABLE public.folded_stats (id int);
      CREATE STATISTICS folded_st ON (id OPERATOR(pg_catalog.+) public.mark('statistics')), id FROM public.folded_stats;
      CREATE TABLE public.folded_part (id int) PARTITION BY RANGE ((id OPERATOR(pg_catalog.+) public.mark('partition key')));
      CREATE TABLE public.folded_part_1 PARTITION OF public.folded_part FOR VALUES FROM (0) TO (100);
      CREATE TABLE public.folded_check (id int CHECK (id OPERATOR(pg_catalog.+) public.mark('check') OPERATOR(pg_catalog.>) 0));
      -- An owner function on a column in an index and a CHECK: the planner cannot fold it, reads never run it.
      CREATE FUNCTION public.norm(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('norm'); RETURN pg_catalog.lower(t); END $$;
      CREATE TABLE public.by_column (name text CHECK (public.norm(name) IS NOT NULL));
      INSERT INTO public.by_column VALUES ('A'), ('b');
      CREATE INDEX by_column_norm ON public.by_column (public.norm(name));
      -- A harmless owner function, allowed by name later.
      CREATE FUNCTION public.fine() RETURNS int LANGUAGE sql STABLE AS 'SELECT 42';
      CREATE VIEW public.v_fine AS SELECT public.fine() AS f;
    `);
    await owner.end();
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    connectionId = await createConnection(s, postgresConnection(info, { database: DB, name: 'Owner code' }));
    fake.script({ content: 'Tables of an owner.' });
    const tested = await s.call('POST', `/connections/${connectionId}/test`);
    expect(tested.body.data, tested.text).toMatchObject({ success: true, schemaIntrospected: true });
    const d = await s.call('POST', '/dashboards', { body: { title: `Owner code ${DB}` } });
    expect(d.status, d.text).toBe(201);
    dashboardId = d.body.data.id;
    mcp = await mcpClient(s);
    paths = readPaths(s, { fake, mcp: mcp.client, connectionId, dashboardId, tag: DB });
  });

  afterAll(async () => {
    await mcp?.client.close();
    await s?.stop();
    await fake?.stop();
  });

  /** Statements of issue 32 points 1, 2 and 4 (and what else runs owner code on a read): each must be refused. */
  const hostile: [sql: string, fn: string][] = [
    ['SELECT 1 <%%> ANY (SELECT 2)', 'public.mark_op'],
    ['SELECT 1 <%%> ALL (SELECT 2)', 'public.mark_op'],
    ['SELECT 1 <%%> SOME (SELECT 2)', 'public.mark_op'],
    ['SELECT NOT (1 <%%> ALL (SELECT 2))', 'public.mark_op'],
    ['SELECT 1 <%%> ANY (ARRAY[2])', 'public.mark_op'],
    ['SELECT 1 OPERATOR(hidden.###) 2', 'public.mark_op'],
    ['SELECT EXISTS (SELECT 1 WHERE 1 OPERATOR(hidden.###) 2)', 'public.mark_op'],
    ['SELECT 1 OPERATOR(hidden.###) ANY (ARRAY[1, 2])', 'public.mark_op'],
    ['SELECT count(*) FILTER (WHERE id OPERATOR(hidden.###) 2) FROM t', 'public.mark_op'],
    ['SELECT 1 OPERATOR(hidden.###) ANY (SELECT 2)', 'public.mark_op'],
    ['SELECT * FROM v', 'public.mark'],
    ['SELECT * FROM vv', 'public.mark'],
    ["SELECT 'x'::checked", 'public.mark'],
    ["SELECT CAST('z' AS checked)", 'public.mark'],
    ['SELECT (row(1)::pair) + 1', 'public.pair_to_int'],
    ['SELECT * FROM guarded', 'public.mark'],
    ['SELECT * FROM guarded_sub', 'public.mark'],
    ['SELECT * FROM guarded_eq', 'public.int_eq'],
    ['SELECT marked_sum(id) FROM t', 'marked_sum'],
    ['SELECT * FROM folded_index', 'public.mark'],
    ['SELECT * FROM folded_stats', 'public.mark'],
    ['SELECT * FROM folded_part', 'public.mark'],
    ['SELECT * FROM folded_check WHERE id = 1', 'public.mark'],
  ];
  /** Point 3: shadowing built-ins through the role's search_path. These run (200), with the built-ins. */
  const shadowed = [
    "SELECT CASE 'a' WHEN 'b' THEN 1 ELSE 0 END AS c",
    "SELECT 'a' IN (SELECT 'b') AS i",
    "SELECT 'a' = ANY (SELECT 'b') AS a",
    'SELECT 2 BETWEEN 1 AND 3 AS b',
    'SELECT 2 BETWEEN SYMMETRIC 3 AND 1 AS b',
    "SELECT 'a' IN ('a', 'b') AS x",
    'SELECT id FROM t WHERE id IN (1, 2) ORDER BY id',
    "SELECT lower('X') AS l, nullif('a', 'b') AS n, 'a' IS DISTINCT FROM 'b' AS d",
    'SELECT a.id FROM t a JOIN t b USING (id) WHERE a.id BETWEEN 1 AND 2 ORDER BY 1',
  ];

  it('the owner objects are live: each statement writes when the owner runs it in a READ ONLY transaction', async () => {
    for (const sql of [...hostile.map(([h]) => h), ...shadowed]) {
      const before = await marks();
      await direct(sql).catch(() => undefined);
      expect(await marks(), sql).toBeGreaterThan(before);
    }
  });

  const refused = (r: PathAnswer, fn: string, where: string) => {
    expect(r.status, `${where}: ${r.text}`).toBe(400);
    expect(r.body.error.code, where).toBe('READ_ONLY_VIOLATION');
    expect(r.body.error.message, where).toContain(`${fn}()`);
    expect(r.body.error.message, where).toMatch(/allowedFunctions/);
  };

  for (const index of [0, 1, 2, 3, 4, 5, 6])
    it(`read path ${index + 1} of 7 refuses every hostile statement and the marker table stays unchanged`, async () => {
      const [name, read] = paths[index];
      for (const [sql, fn] of hostile) {
        const before = await marks();
        refused(await read(sql), fn, `${name}: ${sql}`);
        expect(await marks(), `${name}: ${sql}`).toBe(before);
      }
    });

  for (const index of [0, 1, 2, 3, 4, 5, 6])
    it(`read path ${index + 1} of 7 runs the valid reads of point 2 with the built-ins, writing nothing`, async () => {
      const [name, read] = paths[index];
      for (const sql of shadowed) {
        const before = await marks();
        // A metric's formula answers one number: the read is counted.
        const r = await read(name === 'metric value' ? `SELECT count(*)::int AS n FROM (${sql}) x` : sql);
        expect(r.status, `${name}: ${sql}: ${r.text}`).toBe(200);
        expect(await marks(), `${name}: ${sql}`).toBe(before);
      }
    });

  it('reads a table whose index and CHECK call an owner function on a column, and one whose row security skips its owner', async () => {
    const sql = 'SELECT name FROM by_column ORDER BY name';
    const before = await marks();
    await direct(sql);
    expect(await marks()).toBe(before);
    for (const [name, read] of paths) {
      const r = await read(name === 'metric value' ? `SELECT count(*)::int AS n FROM (${sql}) x` : sql);
      expect(r.status, `${name}: ${r.text}`).toBe(200);
    }
    expect(await marks()).toBe(before);
    // Row security the table does not force does not apply to its owner: the policy never runs.
    const rls = 'SELECT id FROM owned_rls';
    await direct(rls);
    const r = await s.call('POST', `/connections/${connectionId}/query`, { body: { sql: rls } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([{ id: 1 }]);
    expect(await marks()).toBe(before);
    // Called by name it is the owner's function like any other.
    const called = await s.call('POST', `/connections/${connectionId}/query`, {
      body: { sql: "SELECT name FROM by_column WHERE norm(name) = 'b'" },
    });
    refused(called, 'norm', 'called by name');
  });

  it('answers the built-ins, not the shadowing operators, and names the objects in its refusals', async () => {
    const q = (sql: string) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } });
    const ok = await q("SELECT 'a' IN ('a', 'b') AS x, 2 BETWEEN 1 AND 3 AS b, lower('X') AS l");
    expect(ok.body.data.rows).toEqual([{ x: true, b: true, l: 'x' }]);
    const view = await q('SELECT id FROM vv');
    expect(view.body.error.details).toMatchObject({
      statementType: 'FUNCTION',
      function: 'public.mark',
      via: 'view',
      object: 'public.v read through public.vv',
    });
    expect(view.body.error.message).toContain('Reading the view public.v (read through public.vv)');
    const policy = await q('SELECT * FROM guarded');
    expect(policy.body.error.details).toMatchObject({ via: 'policy', object: 'public.guarded p' });
    const throughPolicy = await q('SELECT * FROM guarded_sub');
    expect(throughPolicy.body.error.details).toMatchObject({
      via: 'view',
      object: 'public.v read through public.guarded_sub',
    });
    // Stored when the policy was written: the owner's operator, whatever the read's path.
    const stored = await q('SELECT * FROM guarded_eq');
    expect(stored.body.error.details).toMatchObject({ function: 'public.int_eq', via: 'policy' });
    const cast = await q('SELECT (row(1)::pair) + 1');
    expect(cast.body.error.details).toMatchObject({ via: 'cast', object: 'pair to integer' });
    const op = await q('SELECT 1 OPERATOR(hidden.###) 2');
    expect(op.body.error.details).toMatchObject({ via: 'operator', object: 'hidden.###(integer, integer)' });
    const folded = await q('SELECT * FROM folded_index');
    expect(folded.body.error.details).toMatchObject({
      via: 'index',
      object: 'public.folded_index folded_idx',
    });
    expect(folded.body.error.message).toContain(
      'the planner evaluates the expression of its index folded_idx',
    );
  });

  it('runs an owner function once the admin lists it, also through a view, and refuses it again once removed', async () => {
    const q = (sql: string) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } });
    refused(await q('SELECT * FROM v_fine'), 'public.fine', 'before');
    const listed = await s.call('PATCH', `/connections/${connectionId}`, {
      body: { allowedFunctions: ['public.fine', 'mark'] },
    });
    expect(listed.status, listed.text).toBe(200);
    try {
      for (const [name, read] of paths) {
        const r = await read('SELECT f FROM v_fine');
        expect(r.status, `${name}: ${r.text}`).toBe(200);
        expect(JSON.stringify(r.body.data), name).toContain('42');
      }
      // Listed by name, the owner's mark runs: the view's read writes its row (the admin's choice).
      const before = await marks();
      const view = await q('SELECT * FROM v WHERE id = 1');
      expect(view.status, view.text).toBe(200);
      expect(await marks()).toBeGreaterThan(before);
    } finally {
      await s.call('PATCH', `/connections/${connectionId}`, { body: { allowedFunctions: [] } });
    }
    const after = await marks();
    refused(await q('SELECT * FROM v_fine'), 'public.fine', 'after');
    refused(await q('SELECT * FROM v WHERE id = 1'), 'public.mark', 'after');
    expect(await marks()).toBe(after);
  });

  it('forgets its verdicts when the catalog changes: a view replaced after a valid read is refused at once', async () => {
    const q = (sql: string) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } });
    await postgresAdmin(info, DB, 'CREATE VIEW public.later AS SELECT 1 AS x');
    await postgresAdmin(info, DB, `ALTER VIEW public.later OWNER TO ${info.user}`);
    expect((await q('SELECT x FROM later')).status).toBe(200);
    expect((await q('SELECT x FROM later')).status).toBe(200);
    await postgresAdmin(info, DB, "CREATE OR REPLACE VIEW public.later AS SELECT public.mark('later') AS x");
    const before = await marks();
    refused(await q('SELECT x FROM later'), 'public.mark', 'replaced view');
    expect(await marks()).toBe(before);
  });
});
