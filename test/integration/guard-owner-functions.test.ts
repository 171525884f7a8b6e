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
 * Issue 23.1: a function the database owner wrote runs in a read only when the connection's admin
 * lists it, whatever its volatility label. The owner (the connection's own user, as in the review)
 * writes STABLE plpgsql and SQL wrappers of dblink_exec, pg_advisory_lock, set_config and pg_sleep;
 * every read path refuses them (400 READ_ONLY_VIOLATION naming the function), and the database is
 * read back unchanged.
 */
const DB = `guard_owner_${process.pid}`;

describe('PostgreSQL functions the owner wrote, on every read path', () => {
  const info = inject('postgres');
  let s: TestServer;
  let fake: FakeOpenAI;
  let connectionId: string;
  let owner: pg.Client;
  let mcp: Awaited<ReturnType<typeof mcpClient>>;
  let paths: ReadPath[];
  const conninfo = `host=${info.host} port=${info.port} dbname=${DB} user=${info.user} password=${info.password}`;

  /** What the wrappers could change: the audit table, advisory locks, the owner's role settings. */
  const state = async () => ({
    audit: (await postgresAdmin(info, DB, 'SELECT count(*)::int AS n FROM audit'))[0].n,
    locks: (
      await postgresAdmin(info, DB, "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'")
    )[0].n,
  });
  let initial: Awaited<ReturnType<typeof state>>;

  beforeAll(async () => {
    await createPostgresDatabase(info, DB);
    // dblink is not a trusted extension: the server's administrator installs it, as in the review.
    await postgresAdmin(info, DB, 'CREATE EXTENSION dblink');
    owner = new pg.Client({
      host: info.host,
      port: info.port,
      user: info.user,
      password: info.password,
      database: DB,
    });
    await owner.connect();
    await owner.query(`
      CREATE TABLE audit (x int);
      CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2);
      CREATE FUNCTION report_helper() RETURNS int LANGUAGE plpgsql STABLE AS $$
        BEGIN PERFORM dblink_exec('${conninfo}', 'INSERT INTO audit(x) VALUES (1)'); RETURN 1; END $$;
      CREATE FUNCTION report_sql() RETURNS text LANGUAGE sql STABLE AS $$
        SELECT dblink_exec('${conninfo}', 'INSERT INTO audit(x) VALUES (2)') $$;
      CREATE FUNCTION lock_helper() RETURNS int LANGUAGE plpgsql STABLE AS $$
        BEGIN PERFORM pg_advisory_lock(9191); RETURN 1; END $$;
      CREATE FUNCTION lock_sql() RETURNS int LANGUAGE sql STABLE AS $$ SELECT 1 FROM (SELECT pg_advisory_lock(9192)) x $$;
      CREATE FUNCTION config_helper() RETURNS text LANGUAGE plpgsql STABLE AS $$
        BEGIN RETURN set_config('default_transaction_read_only', 'off', false); END $$;
      CREATE FUNCTION config_sql() RETURNS text LANGUAGE sql IMMUTABLE AS $$
        SELECT set_config('default_transaction_read_only', 'off', false) $$;
      CREATE FUNCTION sleep_helper() RETURNS int LANGUAGE plpgsql STABLE AS $$
        BEGIN PERFORM pg_sleep(0.01); RETURN 1; END $$;
      CREATE FUNCTION sleep_sql() RETURNS int LANGUAGE sql STABLE AS $$ SELECT 1 FROM (SELECT pg_sleep(0.01)) x $$;
    `);
    fake = await startFakeOpenAI();
    s = await startTestServer({
      env: { OPENAI_API_KEY: fake.apiKey, OPENAI_BASE_URL: fake.url, LOUPE_MODEL: 'test-model' },
    });
    connectionId = await createConnection(s, postgresConnection(info, { database: DB, name: 'Owned' }));
    fake.script({ content: 'Two tables: audit and t.' });
    const tested = await s.call('POST', `/connections/${connectionId}/test`);
    expect(tested.body.data, tested.text).toMatchObject({ success: true, schemaIntrospected: true });
    const d = await s.call('POST', '/dashboards', { body: { title: `Owner functions ${DB}` } });
    expect(d.status, d.text).toBe(201);
    mcp = await mcpClient(s);
    paths = readPaths(s, { fake, mcp: mcp.client, connectionId, dashboardId: d.body.data.id, tag: DB });
    initial = await state();
  });

  afterAll(async () => {
    await mcp?.client.close();
    await s?.stop();
    await fake?.stop();
    await owner?.end();
  });

  it('the wrappers do write, lock and change settings when run outside Loupe, even in a read-only transaction', async () => {
    await owner.query('BEGIN READ ONLY');
    const r = await owner.query('SELECT report_helper() AS a, lock_helper() AS b, config_helper() AS c');
    await owner.query('COMMIT');
    expect(r.rows[0]).toMatchObject({ a: 1, b: 1 });
    expect((await state()).audit).toBe(initial.audit + 1);
    // Undo: the lock dies with the session's release, the row is removed.
    await owner.query('SELECT pg_advisory_unlock_all()');
    await postgresAdmin(info, DB, 'DELETE FROM audit');
    initial = await state();
  });

  /** Expects 400 READ_ONLY_VIOLATION naming `fn`, on a save (when the path checks there) or on the run. */
  const refused = (r: PathAnswer, fn: string, path: string) => {
    expect(r.status, `${path}: ${r.text}`).toBe(400);
    expect(r.body.error.code, path).toBe('READ_ONLY_VIOLATION');
    // The workflow run and the chat tool carry the refusal's text (no details): it names the function too.
    if (r.body.error.details !== undefined)
      expect(r.body.error.details, path).toMatchObject({ statementType: 'FUNCTION', function: fn });
    expect(r.body.error.message, path).toContain(`${fn}()`);
    expect(r.body.error.message, path).toMatch(/allowedFunctions/);
  };
  const wrappers = [
    'report_helper',
    'report_sql',
    'lock_helper',
    'lock_sql',
    'config_helper',
    'config_sql',
    'sleep_helper',
    'sleep_sql',
  ];
  for (const index of [0, 1, 2, 3, 4, 5, 6])
    it(`read path ${index + 1} of 7 refuses every STABLE or IMMUTABLE wrapper and changes nothing`, async () => {
      const [path, read] = paths[index];
      for (const fn of wrappers) {
        const r = await read(`SELECT ${fn}() AS x FROM t WHERE id = 1`);
        refused(r, fn, `${path} ${fn}`);
      }
      expect(await state()).toEqual(initial);
    });

  it('allows a function once the admin lists it in allowedFunctions, and refuses it again once removed', async () => {
    const q = (sql: string) => s.call('POST', `/connections/${connectionId}/query`, { body: { sql } });
    refused(await q('SELECT sleep_helper() AS x'), 'sleep_helper', 'before');

    const listed = await s.call('PATCH', `/connections/${connectionId}`, {
      body: { allowedFunctions: ['public.sleep_helper', 'report_sql'] },
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.allowedFunctions).toEqual(['public.sleep_helper', 'report_sql']);
    const ok = await q('SELECT sleep_helper() AS x');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.rows).toEqual([{ x: 1 }]);
    // The same list reaches the other read paths (one shared guard entry): a saved query runs it too.
    const saved = await s.call('POST', '/saved-queries', {
      body: { name: `listed ${DB}`, query: 'SELECT sleep_helper() AS x', connectionId, parameters: [] },
    });
    expect(saved.status, saved.text).toBe(201);
    const run = await s.call('POST', `/saved-queries/${saved.body.data.id}/run`, { body: {} });
    expect(run.status, run.text).toBe(200);
    // Listing one function allows nothing else.
    refused(await q('SELECT lock_helper() AS x'), 'lock_helper', 'unlisted');

    const removed = await s.call('PATCH', `/connections/${connectionId}`, { body: { allowedFunctions: [] } });
    expect(removed.status, removed.text).toBe(200);
    refused(await q('SELECT sleep_helper() AS x'), 'sleep_helper', 'after');
    refused(
      await s.call('POST', `/saved-queries/${saved.body.data.id}/run`, { body: {} }),
      'sleep_helper',
      'saved after',
    );
    expect(await state()).toEqual(initial);
  });

  it('refuses to list what no read may call, and the built-ins and reviewed extensions need no listing', async () => {
    for (const name of ['dblink_exec', 'pg_advisory_lock', 'set_config', 'pg_catalog.pg_sleep']) {
      const r = await s.call('PATCH', `/connections/${connectionId}`, { body: { allowedFunctions: [name] } });
      expect(r.status, `${name}: ${r.text}`).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(r.body.error.details)).toContain('body.allowedFunctions.0');
    }
    const got = await s.call('GET', `/connections/${connectionId}`);
    expect(got.body.data.allowedFunctions).toEqual([]);
    await postgresAdmin(info, DB, 'CREATE EXTENSION IF NOT EXISTS pg_trgm');
    const r = await s.call('POST', `/connections/${connectionId}/query`, {
      body: {
        sql: "SELECT similarity('loupe', 'loop') > 0 AS s, 'loupe' % 'loupes' AS close, lower('X') AS l, now() IS NOT NULL AS n",
      },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([{ s: true, close: true, l: 'x', n: true }]);
    // The extension's volatile set_limit is not on the reviewed list.
    const limit = await s.call('POST', `/connections/${connectionId}/query`, {
      body: { sql: 'SELECT set_limit(0.1)' },
    });
    refused(limit, 'set_limit', 'set_limit');
  });
});
