import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Issue 43, strict mode (the connection's role can reach an escape: dblink installed with EXECUTE to
 * PUBLIC, as CREATE EXTENSION leaves it), on Debian's PostgreSQL with JIT on and PostGIS, hll, ip4r,
 * semver, prefix, citext and pg_trgm installed by the administrator. An ordinary owner role (the
 * connection's login) writes `mark(note)`, which commits a row to a marker table through dblink_exec,
 * and hides it behind each bypass class of the review: named arguments reaching an owner overload
 * that shadows a built-in, owner casts to json run by to_jsonb/jsonb_agg/…, casts from literals' types,
 * a partial-index predicate the planner folds, the NEGATOR and COMMUTATOR of an operator whose own
 * function is a built-in, field notation on non-composite values. Each hostile statement is first shown
 * to write when the owner runs it in a READ ONLY transaction; through POST /connections/{id}/query it is
 * refused 400 READ_ONLY_VIOLATION and the marker table is read back unchanged. Ordinary reads of the
 * extensions' types and functions answer (no false refusals), and allowedFunctions matches the exact
 * identity of a function ("Fine" and fine are different functions).
 */
const stock = inject('stockPostgres');
const DB = `guard_strict_${process.pid}`;

describe.skipIf(!stock)('strict mode on a stock server with extensions and dblink (issue 43)', () => {
  const info = stock!;
  let s: TestServer;
  let connectionId: string;
  const conninfo = () =>
    `host=${info.host} port=${info.port} dbname=${DB} user=${info.user} password=${info.password}`;
  const marks = async () =>
    (await postgresAdmin(info, DB, 'SELECT count(*)::int AS n FROM public.marker'))[0].n as number;
  const owner = () =>
    new pg.Client({
      host: info.host,
      port: info.port,
      user: info.user,
      password: info.password,
      database: DB,
    });

  /** Runs `sql` as the owner in a READ ONLY transaction of a new session. */
  const direct = async (sql: string) => {
    const c = owner();
    await c.connect();
    try {
      await c.query('BEGIN READ ONLY');
      await c.query(sql);
      await c.query('ROLLBACK');
    } finally {
      await c.end();
    }
  };
  const q = (sql: string) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } });

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    // The administrator installs the extensions, as teams do; dblink keeps EXECUTE to PUBLIC.
    await postgresAdmin(
      info,
      DB,
      `CREATE EXTENSION postgis; CREATE EXTENSION hll; CREATE EXTENSION ip4r; CREATE EXTENSION semver;
       CREATE EXTENSION prefix; CREATE EXTENSION citext; CREATE EXTENSION pg_trgm; CREATE EXTENSION hstore;
       CREATE EXTENSION btree_gist; CREATE EXTENSION tablefunc; CREATE EXTENSION dblink`,
    );
    const c = owner();
    await c.connect();
    await c.query(`
      CREATE TABLE public.marker (note text, at timestamptz DEFAULT pg_catalog.now());
      CREATE FUNCTION public.mark(note text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN
          PERFORM public.dblink_exec('${conninfo()}',
            pg_catalog.format('INSERT INTO public.marker(note) VALUES (%L)', note));
          RETURN 1;
        END $$;
    `);
    await c.query(`
      -- Ordinary data of the extensions' types.
      CREATE TABLE public.t (id int PRIMARY KEY, name text);
      INSERT INTO public.t VALUES (1, 'a'), (2, 'b'), (3, 'c');
      CREATE TABLE public.places (id int, geom public.geometry(Point, 4326), area public.geography);
      INSERT INTO public.places VALUES (1, public.ST_SetSRID(public.ST_MakePoint(1, 2), 4326), 'POINT(1 2)');
      CREATE TABLE public.visits (day date, users public.hll);
      INSERT INTO public.visits VALUES ('2024-01-01', public.hll_empty());
      CREATE TABLE public.nets (net public.ip4r);
      INSERT INTO public.nets VALUES ('10.0.0.0/8');
      CREATE TABLE public.releases (id int, version public.semver, tag public.citext, code public.prefix_range);
      INSERT INTO public.releases VALUES (1, '1.2.3', 'Stable', '012'), (2, '1.10.0', 'beta', '0123');
      -- 2. An owner overload that shadows a built-in's signature, reached by named notation.
      CREATE FUNCTION public.lower(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('named'); RETURN pg_catalog.lower(t); END $$;
      -- 3. An owner type whose cast to json the json functions apply, and implicit casts from literals.
      CREATE TYPE public.mood AS ENUM ('ok', 'sad');
      CREATE FUNCTION public.mood_json(m public.mood) RETURNS json LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('json cast'); RETURN pg_catalog.to_json(m::text); END $$;
      CREATE CAST (public.mood AS json) WITH FUNCTION public.mood_json(public.mood);
      CREATE TABLE public.moods (m public.mood);
      INSERT INTO public.moods VALUES ('ok');
      CREATE TYPE public.lvl AS ENUM ('ok', 'high');
      -- A function the admin lists (harmless), whose argument the literal's implicit cast fills.
      CREATE FUNCTION public.show_lvl(l public.lvl) RETURNS text LANGUAGE sql STABLE AS 'SELECT l::text';
      CREATE FUNCTION public.int_mood(i int) RETURNS public.lvl LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('int cast'); RETURN 'ok'; END $$;
      CREATE CAST (int AS public.lvl) WITH FUNCTION public.int_mood(int) AS IMPLICIT;
      CREATE FUNCTION public.num_mood(n numeric) RETURNS public.lvl LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('numeric cast'); RETURN 'ok'; END $$;
      CREATE CAST (numeric AS public.lvl) WITH FUNCTION public.num_mood(numeric) AS IMPLICIT;
      CREATE FUNCTION public.bool_mood(b bool) RETURNS public.lvl LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('bool cast'); RETURN 'ok'; END $$;
      CREATE CAST (bool AS public.lvl) WITH FUNCTION public.bool_mood(bool) AS IMPLICIT;
      CREATE FUNCTION public.date_mood(d date) RETURNS public.lvl LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('date cast'); RETURN 'ok'; END $$;
      CREATE CAST (date AS public.lvl) WITH FUNCTION public.date_mood(date) AS IMPLICIT;
      -- 4. A partial index whose predicate the planner folds when it loads the index.
      CREATE TABLE public.folded_partial (id int);
      CREATE INDEX folded_partial_idx ON public.folded_partial (id)
        WHERE id OPERATOR(pg_catalog.>) public.mark('partial index');
      -- 5. Operators whose own functions are built-ins, linked to owner ones the planner may use instead.
      CREATE FUNCTION public.mark_eq(a int, b int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN PERFORM public.mark('linked operator'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
      CREATE OPERATOR public.#=# (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mark_eq);
      CREATE OPERATOR public.<#> (LEFTARG = int, RIGHTARG = int, FUNCTION = pg_catalog.int4ne,
        RESTRICT = pg_catalog.neqsel, NEGATOR = OPERATOR(public.#=#));
      CREATE OPERATOR public.@=@ (LEFTARG = int, RIGHTARG = int, FUNCTION = public.mark_eq);
      CREATE OPERATOR public.=@= (LEFTARG = int, RIGHTARG = int, FUNCTION = pg_catalog.int4eq,
        RESTRICT = pg_catalog.scalarltsel, COMMUTATOR = OPERATOR(public.@=@));
      CREATE TABLE public.stats (id int);
      INSERT INTO public.stats SELECT g % 3 FROM pg_catalog.generate_series(1, 300) g;
      ANALYZE public.stats;
      -- 6. A one-argument function of a non-composite type, reached as a field.
      CREATE FUNCTION public.mark(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
        BEGIN RETURN public.mark('field'); END $$;
      -- 7. Two harmless functions whose names differ only in case.
      CREATE FUNCTION public.fine() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1';
      CREATE FUNCTION public."Fine"() RETURNS int LANGUAGE sql STABLE AS 'SELECT 2';
    `);
    await c.end();
    s = await startTestServer();
    connectionId = await createConnection(
      s,
      postgresConnection(info, { database: DB, name: 'Strict', allowedFunctions: ['show_lvl'] }),
    );
  }, 180_000);

  afterAll(async () => {
    await s?.stop();
  });

  /** Each bypass class of the review (points 2-6 of the brief): refused, naming the function. */
  const hostile: [sql: string, fn: string][] = [
    ["SELECT lower(t => 'ABC')", 'lower'],
    ["SELECT lower(t := 'ABC')", 'lower'],
    ['SELECT to_jsonb(m) FROM moods', 'public.mood_json'],
    ['SELECT to_json(m) FROM moods', 'public.mood_json'],
    ['SELECT jsonb_agg(m) FROM moods', 'public.mood_json'],
    ['SELECT json_agg(m) FROM moods', 'public.mood_json'],
    ["SELECT jsonb_build_object('m', m) FROM moods", 'public.mood_json'],
    ["SELECT json_build_object('m', m) FROM moods", 'public.mood_json'],
    ['SELECT row_to_json(x) FROM moods x', 'public.mood_json'],
    ['SELECT array_to_json(array_agg(m)) FROM moods', 'public.mood_json'],
    ['SELECT show_lvl(1)', 'public.int_mood'],
    ['SELECT show_lvl(1.5)', 'public.num_mood'],
    ['SELECT show_lvl(true)', 'public.bool_mood'],
    ["SELECT show_lvl(date '2024-01-01')", 'public.date_mood'],
    ['SELECT * FROM folded_partial', 'public.mark'],
    ['SELECT * FROM folded_partial WHERE id = 1', 'public.mark'],
    ['SELECT * FROM stats WHERE id <#> 1', 'public.mark_eq'],
    ['SELECT * FROM stats WHERE 1 =@= id', 'public.mark_eq'],
    ['SELECT (1).mark', 'mark'],
    ['SELECT (id).mark FROM t', 'mark'],
    ['SELECT (t.id).mark FROM t', 'mark'],
  ];

  it('each hostile statement writes when the owner runs it in a READ ONLY transaction', async () => {
    for (const [sql] of hostile) {
      const before = await marks();
      await direct(sql).catch(() => undefined);
      expect(await marks(), sql).toBeGreaterThan(before);
    }
  });

  it('the connection is in strict mode: its role reaches dblink', async () => {
    const r = await q("SELECT public.dblink_exec('x', 'y')");
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    // An owner function is refused by name (open mode would run it).
    const owned = await q('SELECT fine()');
    expect(owned.status, owned.text).toBe(400);
  });

  it('refuses every hostile statement and the marker table stays unchanged', async () => {
    for (const [sql, fn] of hostile) {
      const before = await marks();
      const r = await q(sql);
      expect(r.status, `${sql}: ${r.text}`).toBe(400);
      expect(r.body.error.code, sql).toBe('READ_ONLY_VIOLATION');
      expect(r.body.error.message, sql).toContain(`${fn}()`);
      expect(await marks(), sql).toBe(before);
    }
  });

  it('answers ordinary reads of the reviewed extensions (no false refusals)', async () => {
    const reads = [
      'SELECT 1 WHERE 1 = 1',
      'SELECT * FROM t WHERE id = 1',
      'SELECT id FROM t WHERE id > 1 AND id < 3 ORDER BY id',
      'SELECT ST_AsText(geom) FROM places',
      'SELECT ST_Distance(geom, ST_SetSRID(ST_MakePoint(0, 0), 4326)) FROM places',
      'SELECT ST_Within(geom, ST_MakeEnvelope(0, 0, 5, 5, 4326)) FROM places',
      'SELECT ST_Distance(area, area) FROM places',
      'SELECT hll_cardinality(users) FROM visits',
      "SELECT * FROM nets WHERE net >>= '10.1.2.3'",
      'SELECT max(version) FROM releases',
      'SELECT * FROM releases',
      "SELECT * FROM releases WHERE version > '1.5.0' ORDER BY version",
      "SELECT * FROM releases WHERE tag = 'STABLE'",
      "SELECT similarity(name, 'a') FROM t",
      "SELECT * FROM releases WHERE code @> '01234'",
      "SELECT 'a=>1'::hstore -> 'a' AS v",
      'SELECT to_jsonb(r) FROM releases r',
      'SELECT jsonb_agg(id) FROM t',
    ];
    const before = await marks();
    for (const sql of reads) {
      const r = await q(sql);
      expect(r.status, `${sql}: ${r.text}`).toBe(200);
    }
    expect(await marks()).toBe(before);
  });

  it('keeps the SQL-text functions of a reviewed extension refused (tablefunc crosstab, connectby)', async () => {
    for (const sql of [
      "SELECT * FROM crosstab('SELECT 1, 2, 3') AS x(a int, b int)",
      "SELECT * FROM connectby('t', 'id', 'id', '1', 0) AS x(a int, b int, c int)",
    ]) {
      const r = await q(sql);
      expect(r.status, `${sql}: ${r.text}`).toBe(400);
      expect(r.body.error.message).toMatch(/runs SQL text/);
    }
  });

  it("refuses an extension's SQL function while a schema the owner writes comes first on the path", async () => {
    const sql = "SELECT ST_AsText(ST_Buffer('POINT(1 2)'::geography, 10)) IS NOT NULL AS b";
    expect((await q(sql)).status).toBe(200);
    // "$user" (the role's default search_path starts with it) now names a schema the owner owns.
    const c = owner();
    await c.connect();
    await c.query(`CREATE SCHEMA ${info.user}`);
    try {
      const r = await q(sql);
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.message).toMatch(
        /extension postgis is reviewed.*comes before public on the search_path/,
      );
    } finally {
      await c.query(`DROP SCHEMA ${info.user}`);
      await c.end();
    }
    expect((await q(sql)).status).toBe(200);
  });

  it('matches allowedFunctions by exact identity: fine and "Fine" are different functions', async () => {
    const allow = async (list: string[]) => {
      const r = await s.call('PATCH', `/connections/${connectionId}`, { body: { allowedFunctions: list } });
      expect(r.status, r.text).toBe(200);
      return r.body.data.allowedFunctions as string[];
    };
    expect(await allow(['fine'])).toEqual(['fine']);
    expect((await q('SELECT fine() AS n')).body.data?.rows).toEqual([{ n: 1 }]);
    expect((await q('SELECT "Fine"() AS n')).status).toBe(400);
    // Unquoted, the name folds to lower case, as PostgreSQL reads it.
    expect(await allow(['FINE'])).toEqual(['fine']);
    expect((await q('SELECT "Fine"() AS n')).status).toBe(400);
    expect(await allow(['"Fine"'])).toEqual(['"Fine"']);
    expect((await q('SELECT "Fine"() AS n')).body.data?.rows).toEqual([{ n: 2 }]);
    expect((await q('SELECT fine() AS n')).status).toBe(400);
    expect(await allow(['public."Fine"'])).toEqual(['public."Fine"']);
    expect((await q('SELECT "Fine"() AS n')).status).toBe(200);
    expect((await q('SELECT fine() AS n')).status).toBe(400);
    // A quoted entry is still checked against the names no setting allows.
    const denied = await s.call('PATCH', `/connections/${connectionId}`, {
      body: { allowedFunctions: ['"dblink_exec"'] },
    });
    expect(denied.status, denied.text).toBe(400);
    await allow([]);
  });
});
