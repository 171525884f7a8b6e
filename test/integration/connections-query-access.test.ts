import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * The query route reads its connection in the same write that takes its history number; every access
 * decision must still be made on this request's caller and this request's record.
 */
describe('POST /connections/{id}/query decides access on each request', () => {
  let s: TestServer;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-query-access-'));
  const file = join(dir, 'items.db');
  const create = async (name: string) => {
    const r = await s.call('POST', '/connections', {
      body: { name, type: 'SQLITE', database: placeSqlite(s, file) },
    });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  };
  const query = (id: string, key?: string) =>
    s.call('POST', `/connections/${id}/query`, { key, body: { sql: 'SELECT id FROM items' } });

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec('CREATE TABLE items (id INTEGER PRIMARY KEY); INSERT INTO items VALUES (1), (2);');
    d.close();
    s = await startTestServer();
  });
  afterAll(async () => {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a member whose assignment is removed gets 404 on the very next query', async () => {
    const id = await create('assigned then removed');
    const m = await s.call('POST', '/members', {
      body: { email: 'qa-member@example.com', name: 'Member', role: 'member', connectionIds: [id] },
    });
    const key = (await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'k' } })).body.data
      .key as string;
    expect((await query(id, key)).status).toBe(200);
    expect(
      (await s.call('PATCH', `/members/${m.body.data.id}`, { body: { connectionIds: [] } })).status,
    ).toBe(200);
    const r = await query(id, key);
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('NOT_FOUND');
  });

  it('a deactivated connection answers 422 and a deleted one 404 on the very next query', async () => {
    const id = await create('deactivated then deleted');
    expect((await query(id)).status).toBe(200);
    expect((await s.call('PATCH', `/connections/${id}`, { body: { isActive: false } })).status).toBe(200);
    const inactive = await query(id);
    expect(inactive.status).toBe(422);
    expect(inactive.body.error.code).toBe('CONNECTION_INACTIVE');
    expect((await s.call('DELETE', `/connections/${id}`)).status).toBe(200);
    expect((await query(id)).status).toBe(404);
  });

  it('an id the API refuses is a 400, never read and never a 500', async () => {
    const r = await query('x'.repeat(2000));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
  });
});
