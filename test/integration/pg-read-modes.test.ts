/**
 * Issue 43: PostgreSQL reads rest on PostgreSQL's own guarantees. The escape inventory
 * (guard/postgres-escapes.ts) lists what the connection's role can reach beyond a read-only
 * transaction; with nothing, reads run in open mode (no per-statement catalog analysis: owner functions
 * and views run, PostGIS comparisons answer), with anything, in strict mode (the function rule). On
 * Debian's PostgreSQL as teams run it (JIT on, PostGIS installed by a superuser in public), with an
 * ordinary login. Each escape is named with its REVOKE statements; running them turns the connection
 * open without a restart; a GRANT turns it strict again before the next statement runs. Owner code that
 * leaves session state (an advisory lock, a setting) leaves nothing for the next read on the session.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { closeAllDrivers, driverFor } from '../../shared/databases/drivers/index';
import type { ConnectionTarget } from '../../shared/databases/drivers/types';
import { readSafety, runReadOnly } from '../../shared/databases/run';
import { forgetEscapeInventories } from '../../shared/guard/postgres-escapes';
import {
  createConnection,
  createPostgresDatabase,
  postgresAdmin,
  postgresConnection,
} from '../support/connections';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai';
import type { DbInfo } from '../support/global-setup';
import { mcpClient } from '../support/mcp';
import { readPaths } from '../support/read-paths';
import { startTestServer, type TestServer } from '../support/server';

const stock = inject('stockPostgres');
const suffix = `${process.pid}_${Date.now().toString(36)}`;

/** A database of the stock server with PostGIS installed the ordinary way, tables owned by a non-superuser. */
async function fieldDb(info: DbInfo, name: string, extra = '') {
  await createPostgresDatabase(info, name);
  await postgresAdmin(
    info,
    name,
    `CREATE EXTENSION postgis; CREATE EXTENSION semver; CREATE EXTENSION hll;
     GRANT CREATE, USAGE ON SCHEMA public TO ${info.user};
     ${extra}`,
  );
}

const asLogin = async (info: DbInfo, db: string, sql: string) => {
  const c = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.user,
    password: info.password,
    database: db,
  });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
};

describe.skipIf(!stock)("PostgreSQL read modes on Debian's PostgreSQL (issue 43)", () => {
  const info = stock as DbInfo;
  const OPEN = `modes_open_${suffix}`;
  const STRICT = `modes_strict_${suffix}`;
  let s: TestServer;
  let fake: FakeOpenAI;
  let mcp: Awaited<ReturnType<typeof mcpClient>>;
  let openId: string;
  let strictId: string;
  const target = (db: string, id = `modes-${db}`): ConnectionTarget => ({
    id,
    version: '1',
    type: 'POSTGRES',
    host: info.host,
    port: info.port,
    database: db,
    username: info.user,
    password: info.password,
    sslEnabled: false,
  });
  const marks = async (db: string) =>
    (await postgresAdmin(info, db, 'SELECT count(*)::int AS n FROM public.marker'))[0].n as number;

  beforeAll(async () => {
    // Open: PostGIS, semver, hll, no escape for the login. dblink is installed, with EXECUTE revoked
    // from PUBLIC, so that an owner function can try it (and fail) and a GRANT can make it reachable.
    await fieldDb(
      info,
      OPEN,
      `CREATE EXTENSION dblink;
       REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
       GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC;
       DO $$ DECLARE f regprocedure; BEGIN
         FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
           JOIN pg_extension e ON e.oid = d.refobjid WHERE e.extname = 'dblink' LOOP
           EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
         END LOOP; END $$;`,
    );
    await fieldDb(info, STRICT, 'CREATE EXTENSION dblink;');
    for (const db of [OPEN, STRICT]) {
      const conninfo = `host=${info.host} port=${info.port} dbname=${db} user=${info.adminUser} password=${info.adminPassword}`;
      await asLogin(
        info,
        db,
        `CREATE TABLE public.marker (note text);
         CREATE TABLE public.places (id int PRIMARY KEY, name text, geo geography(Point, 4326), version semver);
         INSERT INTO public.places VALUES (1, 'a', 'POINT(0 0)', '1.2.3'), (2, 'b', 'POINT(1 1)', '1.10.0');
         CREATE FUNCTION public.helper(x int) RETURNS int LANGUAGE plpgsql STABLE AS $f$ BEGIN RETURN x * 2; END $f$;
         CREATE FUNCTION public.mark(note text) RETURNS int LANGUAGE plpgsql STABLE AS $f$
           BEGIN PERFORM public.dblink_exec('${conninfo}', pg_catalog.format('INSERT INTO public.marker VALUES (%L)', note)); RETURN 1; END $f$;
         CREATE FUNCTION public.hold_lock(k bigint) RETURNS int LANGUAGE plpgsql STABLE AS $f$ BEGIN PERFORM pg_catalog.pg_advisory_lock(k); RETURN 1; END $f$;
         CREATE FUNCTION public.change_setting() RETURNS text LANGUAGE plpgsql STABLE AS $f$ BEGIN RETURN pg_catalog.set_config('work_mem', '7MB', false); END $f$;
         CREATE FUNCTION public.make_prepared() RETURNS int LANGUAGE plpgsql VOLATILE AS $f$ BEGIN EXECUTE 'PREPARE loupe_left_behind AS SELECT 1'; RETURN 1; END $f$;
         CREATE FUNCTION public.make_temp() RETURNS int LANGUAGE plpgsql VOLATILE AS $f$ BEGIN CREATE TEMP TABLE loupe_left_behind (x int); RETURN 1; END $f$;
         CREATE VIEW public.doubled AS SELECT id, public.helper(id) AS d FROM public.places;`,
      );
    }
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    mcp = await mcpClient(s);
    openId = await createConnection(s, postgresConnection(info, { database: OPEN, name: 'open' }));
    strictId = await createConnection(s, postgresConnection(info, { database: STRICT, name: 'strict' }));
  });

  afterAll(async () => {
    await mcp?.client.close();
    await s?.stop();
    await fake?.stop();
    await closeAllDrivers();
  });

  it('reports open mode for a role that reaches no escape, and strict mode naming dblink with its REVOKE', async () => {
    const open = await s.call('GET', `/connections/${openId}/read-safety`);
    expect(open.status, open.text).toBe(200);
    expect(open.body.data).toMatchObject({ mode: 'open', escapes: [] });
    const strict = await s.call('GET', `/connections/${strictId}/read-safety`);
    expect(strict.body.data.mode).toBe('strict');
    const dblink = strict.body.data.escapes.find((e: { object: string }) => e.object === 'dblink');
    expect(dblink).toMatchObject({ kind: 'extension' });
    expect(dblink.revoke.join('\n')).toMatch(
      /^REVOKE EXECUTE ON FUNCTION .*dblink_exec\(text,text\).* FROM PUBLIC;$/m,
    );
    // The test of the connection shows the same.
    const tested = await s.call('POST', `/connections/${strictId}/test`);
    expect(tested.body.data.readSafety.mode, tested.text).toBe('strict');
  });

  it('open mode: every comparison answers on a PostGIS database, owner functions and views run', async () => {
    for (const sql of [
      'SELECT 1 WHERE 1 = 1',
      'SELECT * FROM places WHERE id = 1',
      "SELECT name FROM places WHERE geo = 'POINT(0 0)'::geography",
      'SELECT max(version) AS v FROM places',
      'SELECT ST_AsText(geo::geometry) AS t, ST_Distance(geo, geo) AS d FROM places ORDER BY id',
      'SELECT public.helper(21) AS h',
      'SELECT * FROM doubled ORDER BY id',
      'SELECT hll_cardinality(hll_add_agg(hll_hash_integer(id))) AS n FROM places',
    ]) {
      const r = await s.call('POST', `/connections/${openId}/query`, { body: { sql } });
      expect(r.status, `${sql}: ${r.text}`).toBe(200);
    }
    const h = await s.call('POST', `/connections/${openId}/query`, {
      body: { sql: 'SELECT public.helper(21) AS h' },
    });
    expect(h.body.data.rows).toEqual([{ h: 42 }]);
  });

  it('open mode, on every read path (query, widget, saved query, metric, workflow step, chat tool, MCP): owner code and PostGIS comparisons answer; a write is refused', async () => {
    const d = await s.call('POST', '/dashboards', { body: { title: `Modes ${suffix}` } });
    expect(d.status, d.text).toBe(201);
    const paths = readPaths(s, {
      fake,
      mcp: mcp.client,
      connectionId: openId,
      dashboardId: d.body.data.id,
      tag: OPEN,
    });
    for (const [name, read] of paths) {
      const r = await read("SELECT public.helper(21) AS h FROM places WHERE geo = 'POINT(0 0)'::geography");
      expect(r.status, `${name}: ${r.text}`).toBe(200);
      expect(JSON.stringify(r.body.data), name).toContain('42');
      const w = await read('DELETE FROM places');
      expect(w.status, `${name}: ${w.text}`).toBe(400);
    }
    expect((await asLogin(info, OPEN, 'SELECT count(*)::int AS n FROM places'))[0].n).toBe(2);
  });

  it("open mode keeps the statement's own grammar checks", async () => {
    const r = await s.call('POST', `/connections/${openId}/query`, { body: { sql: 'DELETE FROM places' } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
  });

  it('open mode: owner code that cannot reach dblink changes nothing (PostgreSQL refuses it)', async () => {
    const before = await marks(OPEN);
    const r = await s.call('POST', `/connections/${openId}/query`, {
      body: { sql: "SELECT public.mark('open')" },
    });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.message).toMatch(/permission denied for function dblink_exec/);
    expect(await marks(OPEN)).toBe(before);
  });

  it('open mode: a lock, a setting or a temporary table made by owner code is gone before the next read of the session', async () => {
    const t = target(OPEN, `modes-session-${suffix}`);
    const key = 4_300_000 + (process.pid % 100_000);
    const r = await runReadOnly(
      t,
      `SELECT public.hold_lock(${key}) AS l, public.change_setting() AS s, public.make_prepared() AS p, pg_backend_pid() AS pid`,
    );
    const pid = Number(r.rows[0].pid);
    // The lock is released by the reset that follows the read (before the session goes back to the pool).
    const until = Date.now() + 5_000;
    let held = 1;
    while (held > 0 && Date.now() < until) {
      held = (
        await postgresAdmin(
          info,
          OPEN,
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${key} AND pid = ${pid}`,
        )
      )[0].n;
      if (held) await new Promise((res) => setTimeout(res, 20));
    }
    expect(held).toBe(0);
    // The next read on the same pooled session: the setting is the server's again.
    const driver = await driverFor(t);
    const probe =
      "SELECT current_setting('work_mem') AS w, (SELECT count(*)::int FROM pg_prepared_statements) AS prepared, pg_backend_pid() AS pid";
    let again = await runReadOnly(t, probe);
    for (let i = 0; i < 20 && Number(again.rows[0].pid) !== pid; i++) again = await runReadOnly(t, probe);
    expect(Number(again.rows[0].pid)).toBe(pid);
    // The setting was undone by ROLLBACK; the prepared statement (which survives a ROLLBACK) by the reset.
    expect(again.rows[0].w).not.toBe('7MB');
    expect(again.rows[0].prepared).toBe(0);
    // A temporary table cannot even be made: the read-only transaction refuses it.
    await expect(runReadOnly(t, 'SELECT public.make_temp()')).rejects.toMatchObject({
      message: expect.stringMatching(/read-only transaction/),
    });
    expect(driver).toBeDefined();
  });

  it('strict mode: owner code is refused by the function rule and the marker is unchanged', async () => {
    const before = await marks(STRICT);
    const r = await s.call('POST', `/connections/${strictId}/query`, {
      body: { sql: "SELECT public.mark('strict')" },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect(await marks(STRICT)).toBe(before);
  });

  it('strict mode: a view replaced while the read waits on a lock is judged again, and the marker is unchanged', async () => {
    await asLogin(
      info,
      STRICT,
      `CREATE TABLE public.locked (id int); INSERT INTO public.locked VALUES (1);
       CREATE VIEW public.plain AS SELECT 1 AS m;`,
    );
    const sql = 'SELECT * FROM public.locked CROSS JOIN public.plain';
    // Judged once while harmless: the verdict is remembered.
    expect((await s.call('POST', `/connections/${strictId}/query`, { body: { sql } })).status).toBe(200);
    const before = await marks(STRICT);
    const attacker = new pg.Client({
      host: info.host,
      port: info.port,
      user: info.user,
      password: info.password,
      database: STRICT,
    });
    await attacker.connect();
    try {
      await attacker.query('BEGIN; LOCK TABLE public.locked IN ACCESS EXCLUSIVE MODE');
      const read = s.call('POST', `/connections/${strictId}/query`, { body: { sql } });
      // Loupe's session waits on the lock …
      const until = Date.now() + 10_000;
      let waiting = 0;
      while (!waiting && Date.now() < until) {
        waiting = (
          await postgresAdmin(
            info,
            STRICT,
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'loupe' AND wait_event_type = 'Lock'`,
          )
        )[0].n;
        if (!waiting) await new Promise((r) => setTimeout(r, 20));
      }
      expect(waiting).toBe(1);
      // … while the view is replaced by one that writes through dblink, and committed.
      await attacker.query("CREATE OR REPLACE VIEW public.plain AS SELECT public.mark('race') AS m; COMMIT");
      const r = await read;
      expect(r.status, r.text).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'READ_ONLY_VIOLATION', details: { via: 'view' } });
      expect(await marks(STRICT)).toBe(before);
    } finally {
      await attacker.query('ROLLBACK').catch(() => {});
      await attacker.end();
    }
  });

  it('strict mode: standard_conforming_strings off on the role or the database runs nothing the guard did not read', async () => {
    // With it off the server would read `'a\' AS a, '` as one string and then call mark(); the guard
    // reads strings with it on, and every read pins it on in its transaction.
    const sql = "SELECT 'a\\' AS a, ' AS b, public.mark($$scs$$) AS c --'";
    for (const where of [`ROLE ${info.user} IN DATABASE ${STRICT}`, `DATABASE ${STRICT}`]) {
      await postgresAdmin(info, STRICT, `ALTER ${where} SET standard_conforming_strings = off`);
      try {
        // The server itself runs mark() on this text when the setting is off (a new session has it).
        const before = await marks(STRICT);
        const c = new pg.Client({
          host: info.host,
          port: info.port,
          user: info.user,
          password: info.password,
          database: STRICT,
        });
        await c.connect();
        await c.query(`BEGIN READ ONLY; ${sql}; ROLLBACK`).finally(() => c.end());
        expect(await marks(STRICT)).toBe(before + 1);
        // Through Loupe, on a connection created now (its sessions start with the setting off): not run.
        const id = await createConnection(
          s,
          postgresConnection(info, { database: STRICT, name: `scs ${where}` }),
        );
        const r = await s.call('POST', `/connections/${id}/query`, { body: { sql } });
        expect([200, 400], r.text).toContain(r.status);
        if (r.status === 200) expect(r.body.data.rows[0].a).toBe('a\\');
        expect(await marks(STRICT)).toBe(before + 1);
      } finally {
        await postgresAdmin(info, STRICT, `ALTER ${where} RESET standard_conforming_strings`);
      }
    }
  });

  it('a GRANT that gives the login an escape turns the connection strict before the next statement runs', async () => {
    const t = target(OPEN, `modes-grant-${suffix}`);
    expect((await readSafety(t)).mode).toBe('open');
    await runReadOnly(t, 'SELECT 1 AS one');
    await postgresAdmin(
      info,
      OPEN,
      `GRANT EXECUTE ON FUNCTION public.dblink_exec(text, text) TO ${info.user}`,
    );
    try {
      const before = await marks(OPEN);
      // No restart, no forgetting: the read's own check sees the catalog change and the read is judged strictly.
      await expect(runReadOnly(t, "SELECT public.mark('after grant')")).rejects.toMatchObject({
        code: 'READ_ONLY_VIOLATION',
      });
      expect(await marks(OPEN)).toBe(before);
      expect((await readSafety(t)).mode).toBe('strict');
    } finally {
      await postgresAdmin(
        info,
        OPEN,
        `REVOKE EXECUTE ON FUNCTION public.dblink_exec(text, text) FROM ${info.user}`,
      );
    }
    expect((await readSafety(t, { fresh: true })).mode).toBe('open');
  });

  it('running the REVOKE statements the inventory gives turns a strict connection open without a restart', async () => {
    const DB = `modes_revoke_${suffix}`;
    await fieldDb(
      info,
      DB,
      `CREATE EXTENSION dblink; CREATE EXTENSION postgres_fdw; CREATE EXTENSION pg_prewarm;
       CREATE SERVER other FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname '${DB}');
       GRANT USAGE ON FOREIGN SERVER other TO ${info.user};
       CREATE FUNCTION public.raw_c(text, text) RETURNS text LANGUAGE c AS 'dblink', 'dblink_exec';
       CREATE LANGUAGE fakeu HANDLER plpgsql_call_handler;
       CREATE FUNCTION public.untrusted() RETURNS int LANGUAGE fakeu AS $f$ BEGIN RETURN 1; END $f$;
       CREATE ROLE owner_${suffix} NOLOGIN;
       GRANT EXECUTE ON FUNCTION public.dblink_exec(text, text) TO owner_${suffix};
       CREATE FUNCTION public.definer() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';
       ALTER FUNCTION public.definer() OWNER TO owner_${suffix};
       GRANT pg_signal_backend TO ${info.user};`,
    );
    const t = target(DB, `modes-revoke-${suffix}`);
    try {
      const found = await readSafety(t, { fresh: true });
      expect(found.mode).toBe('strict');
      const kinds = Object.fromEntries(found.escapes.map((e) => [`${e.kind} ${e.object}`, e]));
      expect(Object.keys(kinds).sort()).toEqual(
        expect.arrayContaining([
          'extension dblink',
          'extension postgres_fdw',
          'extension pg_prewarm',
          'foreign-server other',
          'c-function raw_c(text,text)',
          'untrusted-language untrusted()',
          'server-role pg_signal_backend',
          'security-definer definer()',
        ]),
      );
      // dblink is reached by the login itself (PUBLIC) and by the definer's owner: the definer's row names it.
      expect(kinds['security-definer definer()'].detail).toMatch(/runs as owner_.*extension dblink/);
      // The administrator runs every statement given (superuser), without restarting anything.
      for (const e of found.escapes) for (const stmt of e.revoke) await postgresAdmin(info, DB, stmt);
      const after = await readSafety(t, { fresh: true });
      expect(after.escapes).toEqual([]);
      expect(after.mode).toBe('open');
      // The REVOKE closed the definer too: the login may no longer call it; other reads run in open mode.
      await expect(runReadOnly(t, 'SELECT public.definer() AS d')).rejects.toMatchObject({
        message: expect.stringMatching(/permission denied for function definer/),
      });
      expect((await runReadOnly(t, 'SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      forgetEscapeInventories();
    }
  });

  it("Loupe's own SQL is never JIT-compiled, in either mode, while the user's statement keeps the role's settings", async (ctx) => {
    if (!info.logFile) ctx.skip(true, 'the server log is not readable');
    const { readFileSync } = await import('node:fs');
    const logFile = info.logFile as string;
    // Every plan of this role would be compiled (costs 0); auto_explain logs each plan with its "JIT"
    // section when it was: read back from the server's log, no timing involved.
    const role = `modes_jit_${suffix}`;
    const all = [OPEN, STRICT];
    await postgresAdmin(info, 'postgres', `CREATE ROLE ${role} LOGIN PASSWORD 'jit-pass'`);
    for (const db of all)
      await postgresAdmin(
        info,
        db,
        `GRANT USAGE ON SCHEMA public TO ${role}; GRANT SELECT ON public.places TO ${role};
         ALTER ROLE ${role} IN DATABASE ${db} SET jit_above_cost = 0;
         ALTER ROLE ${role} IN DATABASE ${db} SET session_preload_libraries = 'auto_explain';
         ALTER ROLE ${role} IN DATABASE ${db} SET auto_explain.log_min_duration = 0;
         ALTER ROLE ${role} IN DATABASE ${db} SET auto_explain.log_nested_statements = on;
         ALTER ROLE ${role} IN DATABASE ${db} SET auto_explain.log_format = 'json';`,
      );
    try {
      for (const db of all) {
        const t = { ...target(db, `modes-jit-${db}`), username: role, password: 'jit-pass' };
        const from = readFileSync(logFile, 'utf8').length;
        const r = await runReadOnly(
          t,
          "SELECT name, current_setting('jit') AS jit /* the user statement */ FROM places ORDER BY id",
        );
        // The user's statement runs with the role's own setting (JIT restored after our part).
        expect(r.rows.map((x) => x.jit)).toEqual(['on', 'on']);
        // Plans of the read's own first message (the pin and the check; auto_explain logs statements that
        // run to their end, not cursors closed by ROLLBACK): none compiled.
        const ours = readFileSync(logFile, 'utf8')
          .slice(from)
          .split(/\n(?=\S)/)
          .filter((e) => e.includes('"Query Text"') && !e.includes('the user statement'));
        expect(ours.length, db).toBeGreaterThan(1);
        expect(ours.filter((p) => p.includes('"JIT"')).map((p) => p.slice(0, 300))).toEqual([]);
      }
    } finally {
      await closeAllDrivers();
      for (const db of all)
        await postgresAdmin(
          info,
          db,
          `REVOKE ALL ON public.places FROM ${role}; REVOKE USAGE ON SCHEMA public FROM ${role}; ALTER ROLE ${role} IN DATABASE ${db} RESET ALL`,
        );
      await postgresAdmin(info, 'postgres', `DROP ROLE ${role}`).catch(() => {});
    }
  });

  it('standard_conforming_strings off on the role or the database cannot make the server read the statement otherwise', async () => {
    // With it off, the server would read 'a\\' as a string holding a quote; Loupe pins it on in the read.
    const sql = "SELECT 'a\\' AS first, 'b' AS second";
    for (const where of [`ROLE ${info.user} IN DATABASE ${OPEN}`, `DATABASE ${OPEN}`]) {
      await postgresAdmin(info, OPEN, `ALTER ${where} SET standard_conforming_strings = off`);
      try {
        const r = await s.call('POST', `/connections/${openId}/query`, { body: { sql } });
        expect(r.status, r.text).toBe(200);
        expect(r.body.data.rows).toEqual([{ first: 'a\\', second: 'b' }]);
      } finally {
        await postgresAdmin(info, OPEN, `ALTER ${where} RESET standard_conforming_strings`);
      }
    }
  });
});
