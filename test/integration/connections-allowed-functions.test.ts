import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createConnection,
  mariadbAdmin,
  mariadbConnection,
  postgresConnection,
} from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const maria = inject('mariadb');
const pgInfo = inject('postgres');
const DB = `allowed_fn_${process.pid}`;

/** allowedFunctions (issue 8): set by an admin on create and PATCH, validated, and honoured by the guard. */
describe.skipIf(!maria)('connection allowedFunctions', () => {
  let s: TestServer;
  beforeAll(async () => {
    const m = maria!;
    await mariadbAdmin(
      m,
      undefined,
      `DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}; GRANT ALL PRIVILEGES ON ${DB}.* TO '${m.user}'@'%';`,
    );
    await mariadbAdmin(
      m,
      DB,
      `CREATE FUNCTION plus_one(x INT) RETURNS INT DETERMINISTIC NO SQL RETURN x + 1;
       CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1), (2);
       CREATE FUNCTION del_t() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM t; RETURN 1; END`,
    );
    s = await startTestServer();
  });
  afterAll(async () => {
    await s?.stop();
    if (maria) await mariadbAdmin(maria, undefined, `DROP DATABASE IF EXISTS ${DB}`);
  });

  it('refuses a stored function until an admin lists it, then runs it; PATCH replaces the list', async () => {
    const id = await createConnection(s, mariadbConnection(maria!, { database: DB }));
    const q = (sql: string) => s.call('POST', `/connections/${id}/query`, { body: { sql } });
    const refused = await q('SELECT plus_one(1) AS n');
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect(refused.body.error.details).toMatchObject({ statementType: 'FUNCTION', function: 'plus_one' });

    const patched = await s.call('PATCH', `/connections/${id}`, {
      body: { allowedFunctions: ['Plus_One', 'plus_one'] },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data.allowedFunctions).toEqual(['plus_one']);
    const ok = await q('SELECT plus_one(1) AS n');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.rows).toEqual([{ n: 2 }]);
    expect((await q('SELECT del_t()')).status).toBe(400);

    // Saving a saved query or widget checks the same rule with the same list.
    const saved = await s.call('POST', '/saved-queries', {
      body: {
        name: `plus ${id}`,
        query: 'SELECT plus_one({{x}}) AS n',
        connectionId: id,
        parameters: [{ name: 'x', type: 'number', required: true }],
      },
    });
    expect(saved.status, saved.text).toBe(201);
    const refusedSave = await s.call('POST', '/saved-queries', {
      body: { name: `del ${id}`, query: 'SELECT del_t()', connectionId: id, parameters: [] },
    });
    expect(refusedSave.status).toBe(400);
    expect(refusedSave.body.error.details).toMatchObject({ function: 'del_t', path: 'body.query' });

    const got = await s.call('GET', `/connections/${id}`);
    expect(got.body.data.allowedFunctions).toEqual(['plus_one']);
    await s.call('PATCH', `/connections/${id}`, { body: { allowedFunctions: [] } });
    expect((await q('SELECT plus_one(1) AS n')).status).toBe(400);
    const count = await q('SELECT count(*) AS n FROM t');
    expect(count.body.data.rows).toEqual([{ n: '2' }]);
  });

  it('accepts it on create and answers 400 for bad names, denied built-ins and other database types', async () => {
    const created = await s.call('POST', '/connections', {
      body: mariadbConnection(maria!, { database: DB, allowedFunctions: [`${DB}.plus_one`] }),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.allowedFunctions).toEqual([`${DB}.plus_one`]);
    const bad: [Record<string, unknown>, string][] = [
      [mariadbConnection(maria!, { allowedFunctions: ['x; DROP TABLE t'] }), 'body.allowedFunctions.0'],
      [mariadbConnection(maria!, { allowedFunctions: ['sleep'] }), 'body.allowedFunctions.0'],
      [mariadbConnection(maria!, { allowedFunctions: 'plus_one' }), 'body.allowedFunctions'],
      [postgresConnection(pgInfo, { allowedFunctions: ['dblink_exec'] }), 'body.allowedFunctions.0'],
      [postgresConnection(pgInfo, { allowedFunctions: ['pg_catalog.pg_sleep'] }), 'body.allowedFunctions.0'],
      [{ name: 'lite', type: 'SQLITE', database: 'x.db', allowedFunctions: ['f'] }, 'body.allowedFunctions'],
    ];
    for (const [body, path] of bad) {
      const r = await s.call('POST', '/connections', { body });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(r.body.error.details)).toContain(path);
    }
  });
});
