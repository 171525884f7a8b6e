import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/** Who may reach which connection route: members (assigned only), scopes, other organizations. */
describe('connection access on every route', () => {
  let s: TestServer;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-conn-access-'));
  const file = join(dir, 'access.sqlite');
  let mine: string;
  let other: string;
  let memberKey: string;
  let outsiderKey: string;

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec(
      "CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT); INSERT INTO items VALUES (1, 'a'), (2, 'b');",
    );
    d.close();
    s = await startTestServer();
    const mk = async (name: string) =>
      (
        await s.call('POST', '/connections', {
          body: { name, type: 'SQLITE', database: placeSqlite(s, file) },
        })
      ).body.data.id;
    mine = await mk('assigned');
    other = await mk('not assigned');
    for (const id of [mine, other])
      expect((await s.call('POST', `/connections/${id}/test`)).status).toBe(200);
    const m = await s.call('POST', '/members', {
      body: { email: 'access-member@example.com', name: 'Member', role: 'member', connectionIds: [mine] },
    });
    memberKey = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body.data
      .key;
    outsiderKey = (await createOrganization({ name: 'Outsiders', adminEmail: 'admin@outsiders.example' }))
      .key;
  });
  afterAll(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const routes = (id: string): Array<[string, string, unknown?]> => [
    ['GET', `/connections/${id}`],
    ['POST', `/connections/${id}/test`],
    ['GET', `/connections/${id}/schema`],
    ['POST', `/connections/${id}/schema`],
    ['POST', `/connections/${id}/query`, { sql: 'SELECT id FROM items' }],
    ['GET', `/connections/${id}/queries`],
    ['GET', `/connections/${id}/annotations`],
    ['POST', `/connections/${id}/annotations`, { tableName: 'items', annotation: 'x' }],
    ['POST', `/connections/${id}/annotations/auto`],
  ];

  it('a member uses its assigned connection on every route', async () => {
    for (const [method, path, body] of routes(mine)) {
      const r = await s.call(method, path, { key: memberKey, body });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(300);
    }
  });

  it('a member gets 404 for a connection it is not assigned, on every route', async () => {
    for (const [method, path, body] of routes(other)) {
      const r = await s.call(method, path, { key: memberKey, body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
  });

  it("another organization's admin gets 404 on every route", async () => {
    for (const [method, path, body] of [
      ...routes(mine),
      ['PATCH', `/connections/${mine}`, { name: 'x' }] as [string, string, unknown],
      ['DELETE', `/connections/${mine}`] as [string, string],
    ]) {
      const r = await s.call(method, path, { key: outsiderKey, body });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
  });

  it('raw queries need the query scope; connection routes need the connections scope', async () => {
    const conns = (await s.call('POST', '/keys', { body: { name: 'c', scopes: ['connections'] } })).body.data
      .key;
    const query = (await s.call('POST', '/keys', { body: { name: 'q', scopes: ['query'] } })).body.data.key;
    expect(
      (await s.call('POST', `/connections/${mine}/query`, { key: conns, body: { sql: 'SELECT 1' } })).status,
    ).toBe(403);
    expect(
      (await s.call('POST', `/connections/${mine}/query`, { key: query, body: { sql: 'SELECT 1' } })).status,
    ).toBe(200);
    expect((await s.call('POST', `/connections/${mine}/test`, { key: query })).status).toBe(403);
    expect((await s.call('GET', `/connections/${mine}/schema`, { key: query })).status).toBe(403);
  });

  it('answers bad request bodies on the query route with 400', async () => {
    for (const body of [
      {},
      { sql: '' },
      { sql: 1 },
      { sql: 'SELECT 1', question: 'q'.repeat(2001) },
      { sql: 'SELECT 1', maxRows: 10_001 },
    ]) {
      const r = await s.call('POST', `/connections/${mine}/query`, { body });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
    const malformed = await s.call('POST', `/connections/${mine}/query`, {
      rawBody: '{"sql":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('BAD_REQUEST');
  });
});
