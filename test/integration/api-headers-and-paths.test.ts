import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection, placeSqlite } from '../support/connections';
import { mcpPost } from '../support/mcp';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Issue 32, point 6: every JSON answer of the API says `X-Content-Type-Options: nosniff`, and a
 * SQLite read never shows where the server keeps the database file.
 */
describe('what API answers carry and reveal', () => {
  let s: TestServer;
  let lite: string;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-paths-'));
  const file = join(dir, 'paths.sqlite');

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t VALUES (1, 'a');");
    d.close();
    s = await startTestServer();
    lite = await createConnection(s, { name: 'lite', type: 'SQLITE', database: placeSqlite(s, file) });
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers nosniff on success, validation error, missing key, unknown route, discovery and MCP', async () => {
    const answers = [
      await s.call('GET', '/'),
      await s.call('GET', '/connections'),
      await s.call('POST', '/connections', { body: { name: 1 } }),
      await s.call('GET', '/connections', { key: null }),
      await s.call('GET', '/no-such-route'),
      await s.call('POST', `/connections/${lite}/query`, { body: { sql: 'DELETE FROM t' } }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 401, 404, 400]);
    for (const a of answers) {
      expect(a.headers.get('x-content-type-options'), a.text).toBe('nosniff');
      expect(a.headers.get('content-type')).toContain('application/json');
    }
    const mcp = await mcpPost(s, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    expect(mcp.status, mcp.text).toBe(200);
    expect(mcp.headers.get('x-content-type-options')).toBe('nosniff');
  });

  const leaks = [
    'select * from pragma_database_list',
    'SELECT file FROM pragma_database_list',
    'SELECT * FROM PRAGMA_DATABASE_LIST',
    'select * from "pragma_database_list"',
    'select * from main.pragma_database_list',
    'select * from pragma_database_list()',
    'select name, (select file from pragma_database_list) from t',
    'PRAGMA database_list',
    'pragma main.database_list',
    'EXPLAIN QUERY PLAN select * from pragma_database_list',
  ];
  for (const sql of leaks)
    it(`refuses ${sql} without showing a path`, async () => {
      const r = await s.call('POST', `/connections/${lite}/query`, { body: { sql } });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
      expect(r.text).not.toContain(realpathSync(s.dataDir));
      expect(r.text).not.toContain(s.dataDir);
      expect(r.text).not.toContain('paths.sqlite"');
    });

  it('still runs the reporting pragmas and reads, and its errors show no path', async () => {
    for (const sql of [
      'PRAGMA table_list',
      'SELECT name FROM sqlite_schema',
      "SELECT * FROM pragma_table_info('t')",
    ]) {
      const r = await s.call('POST', `/connections/${lite}/query`, { body: { sql } });
      expect(r.status, `${sql}: ${r.text}`).toBe(200);
      expect(r.text).not.toContain(s.dataDir);
    }
    const failed = await s.call('POST', `/connections/${lite}/query`, {
      body: { sql: 'SELECT * FROM missing' },
    });
    expect(failed.status).toBe(422);
    expect(failed.text).not.toContain(s.dataDir);
  });
});
