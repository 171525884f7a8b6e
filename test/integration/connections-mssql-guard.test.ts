import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllDrivers } from '../../shared/databases/drivers/index';
import { createConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';
import { startTdsWire, type TdsWireServer } from '../support/tds-wire';

/**
 * SQL Server needs no `;` between statements: `SELECT * FROM t SHUTDOWN` is a read and then
 * SHUTDOWN, which rolling back the read's transaction does not undo. Through the API, against the TDS
 * test server (no SQL Server can be installed here), such text is refused before anything reaches
 * the server: no login, no batch, no RPC. A reserved word in brackets is a name and runs.
 */
describe('POST /connections/{id}/query on SQL Server: a reserved word read as an alias never reaches the server', () => {
  let s: TestServer;
  let tds: TdsWireServer;
  let id: string;
  const query = (conn: string, sql: string) =>
    s.call('POST', `/connections/${conn}/query`, { body: { sql } });
  const mssql = (name: string) => ({
    name,
    type: 'MSSQL',
    host: '127.0.0.1',
    port: tds.port,
    database: 'sales',
    username: 'reporter',
    password: 'pw',
    sslEnabled: false,
  });

  beforeAll(async () => {
    tds = await startTdsWire({
      users: { reporter: 'pw' },
      databases: ['sales'],
      respond: (q) =>
        q.startsWith('SELECT id FROM items')
          ? {
              columns: [{ name: 'id', type: 'int' }],
              rows: [[1], [2]],
            }
          : undefined,
    });
    s = await startTestServer();
    id = await createConnection(s, mssql('tds guard'));
  });
  afterAll(async () => {
    await s?.stop();
    await closeAllDrivers();
    await tds?.stop();
  });

  it('runs a read whose reserved-word alias is bracketed, in a rolled-back transaction', async () => {
    const n = tds.requests.length;
    const r = await query(id, 'SELECT id FROM items [commit]');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.rows).toEqual([{ id: 1 }, { id: 2 }]);
    const seen = tds.requests.slice(n);
    expect(seen.some((x) => x.sql?.trim() === 'SELECT id FROM items [commit]')).toBe(true);
    expect(seen.filter((x) => x.kind === 'transaction').map((x) => x.transaction)).toEqual([
      'begin',
      'rollback',
    ]);
  });

  it.each([
    'SELECT * FROM t SHUTDOWN',
    'SELECT * FROM t COMMIT',
    'SELECT * FROM t RECONFIGURE',
    'SELECT id FROM items -- c\nshutdown',
    'SELECT id x FROM items /* c */ ROLLBACK',
    'SELECT id Checkpoint',
    'SELECT * FROM (SELECT id FROM items) KILL',
    'SELECT * FROM t END SHUTDOWN',
  ])('refuses %j with 400 READ_ONLY_VIOLATION and sends nothing', async (sql) => {
    const n = tds.requests.length;
    const r = await query(id, sql);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect(['MULTIPLE_STATEMENTS', 'UNPARSEABLE']).toContain(r.body.error.details.statementType);
    expect(tds.requests.slice(n)).toEqual([]);
  });

  it('on a connection never used, the refusal opens no connection at all (no login)', async () => {
    const fresh = await createConnection(s, mssql('tds guard fresh'));
    const logins = tds.requests.filter((x) => x.kind === 'login').length;
    const n = tds.requests.length;
    const r = await query(fresh, 'SELECT * FROM t SHUTDOWN');
    expect(r.status).toBe(400);
    expect(r.body.error.details.statementType).toBe('MULTIPLE_STATEMENTS');
    await new Promise((done) => setTimeout(done, 100));
    expect(tds.requests.length).toBe(n);
    expect(tds.requests.filter((x) => x.kind === 'login').length).toBe(logins);
    expect(tds.requests.some((x) => /shutdown|reconfigure|rollback|kill/i.test(x.sql ?? ''))).toBe(false);
  });
});
