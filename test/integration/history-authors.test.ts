import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeSqlite } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

/**
 * Issue 45, "one ownership rule": query history entries carry their author and source; a member sees
 * only the entries they ran (not an admin's ad-hoc query), an admin sees all; `source` keeps widget loads
 * apart from ad-hoc queries. On the SQLite demo database, through the real local runtime.
 */
describe('query history: authors, sources and who sees what', () => {
  let s: TestServer;
  let conn: string;
  let memberKey: string;
  let memberId: string;
  let adminId: string;
  const dir = mkdtempSync(join(tmpdir(), 'loupe-history-authors-'));
  const file = join(dir, 'shop.db');
  const ADMIN_SQL = 'SELECT id, total FROM orders /* admin ad hoc */';
  const MEMBER_SQL = 'SELECT count(*) AS n FROM orders /* member ad hoc */';
  const WIDGET_SQL = 'SELECT sum(total) AS revenue FROM orders /* widget */';

  const history = async (query: string, key?: string) => {
    const r = await s.call('GET', `/connections/${conn}/queries${query}`, { key });
    expect(r.status, r.text).toBe(200);
    return r;
  };

  beforeAll(async () => {
    const d = new DatabaseSync(file);
    d.exec(
      'CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL); INSERT INTO orders VALUES (1, 9.5), (2, 20);',
    );
    d.close();
    // This instance keeps its copy of the organization's users for LOUPE_KEY_CACHE_MS (10 s by default).
    s = await startTestServer({ env: { LOUPE_KEY_CACHE_MS: '2000' } });
    const c = await s.call('POST', '/connections', {
      body: { name: 'Shop', type: 'SQLITE', database: placeSqlite(s, file) },
    });
    expect(c.status, c.text).toBe(201);
    conn = c.body.data.id;
    const members = await s.call('GET', '/members');
    adminId = members.body.data.find((m: { role: string }) => m.role === 'admin').id;
    const m = await s.call('POST', '/members', {
      body: { email: 'Mia.Member@example.com', name: 'Mia Member', connectionIds: [conn] },
    });
    expect(m.status, m.text).toBe(201);
    memberId = m.body.data.id;
    const k = await s.call('POST', `/members/${memberId}/keys`, {
      body: { name: 'mia', scopes: ['query', 'dashboards'] },
    });
    expect(k.status, k.text).toBe(201);
    memberKey = k.body.data.key;

    // An admin's ad-hoc query, a member's ad-hoc query, and a widget load by the admin.
    expect((await s.call('POST', `/connections/${conn}/query`, { body: { sql: ADMIN_SQL } })).status).toBe(
      200,
    );
    const mine = await s.call('POST', `/connections/${conn}/query`, {
      body: { sql: MEMBER_SQL, question: 'How many orders?' },
      key: memberKey,
    });
    expect(mine.status, mine.text).toBe(200);
    const dash = await s.call('POST', '/dashboards', { body: { title: 'Revenue' } });
    const w = await s.call('POST', `/dashboards/${dash.body.data.id}/widgets`, {
      body: { title: 'Revenue', type: 'METRIC', connectionId: conn, query: WIDGET_SQL },
    });
    expect(w.status, w.text).toBe(201);
    const data = await s.call('GET', `/dashboards/${dash.body.data.id}/widgets/${w.body.data.id}/data`);
    expect(data.status, data.text).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a member's history shows only their own entries, with author and source: not the admin's ad-hoc query", async () => {
    const r = await history('', memberKey);
    expect(r.body.meta.pagination).toMatchObject({ total: 1, page: 1, totalPages: 1 });
    expect(r.body.data).toHaveLength(1);
    const [entry] = r.body.data;
    expect(entry).toMatchObject({
      sql: MEMBER_SQL,
      question: 'How many orders?',
      source: 'query',
      status: 'SUCCESS',
      userId: memberId,
      author: { id: memberId, name: 'Mia Member', email: 'mia.member@example.com', removed: false },
    });
    const text = JSON.stringify(r.body);
    expect(text).not.toContain('admin ad hoc');
    expect(text).not.toContain(WIDGET_SQL);
    expect(text).not.toMatch(/lp_[A-Za-z0-9]{8}/); // no key material
    // The filter does not widen what a member sees.
    const widgets = await history('?source=widget', memberKey);
    expect(widgets.body.data).toEqual([]);
    expect(widgets.body.meta.pagination.total).toBe(0);
    const adHoc = await history('?source=query', memberKey);
    expect(adHoc.body.data.map((e: { sql: string }) => e.sql)).toEqual([MEMBER_SQL]);
  });

  it("an admin's history shows every entry with its author and source", async () => {
    const r = await history('');
    expect(r.body.meta.pagination.total).toBe(3);
    const bySql = Object.fromEntries(r.body.data.map((e: { sql: string }) => [e.sql, e]));
    expect(bySql[ADMIN_SQL]).toMatchObject({ source: 'query', userId: adminId, author: { id: adminId } });
    expect(bySql[ADMIN_SQL].author.email).toEqual(expect.stringContaining('@'));
    expect(bySql[MEMBER_SQL]).toMatchObject({
      source: 'query',
      author: { id: memberId, name: 'Mia Member', email: 'mia.member@example.com' },
    });
    expect(bySql[WIDGET_SQL]).toMatchObject({ source: 'widget', userId: adminId, author: { id: adminId } });
    // Newest first.
    expect(r.body.data.map((e: { sql: string }) => e.sql)).toEqual([WIDGET_SQL, MEMBER_SQL, ADMIN_SQL]);
  });

  it('source keeps widget loads apart from ad-hoc queries, with totals and pages of the filtered list', async () => {
    const adHoc = await history('?source=query');
    expect(adHoc.body.data.map((e: { sql: string }) => e.sql)).toEqual([MEMBER_SQL, ADMIN_SQL]);
    expect(adHoc.body.meta.pagination).toMatchObject({ total: 2, totalPages: 1 });
    const page2 = await history('?source=query&page=2&pageSize=1');
    expect(page2.body.data.map((e: { sql: string }) => e.sql)).toEqual([ADMIN_SQL]);
    expect(page2.body.meta.pagination).toMatchObject({ total: 2, page: 2, pageSize: 1, totalPages: 2 });
    const widgets = await history('?source=widget');
    expect(widgets.body.data.map((e: { sql: string; source: string }) => [e.source, e.sql])).toEqual([
      ['widget', WIDGET_SQL],
    ]);
    const both = await history('?source=widget,query');
    expect(both.body.meta.pagination.total).toBe(3);
    const bad = await s.call('GET', `/connections/${conn}/queries?source=adhoc`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    expect(bad.body.error.details.issues[0]).toMatchObject({ path: 'query.source', code: 'invalid_format' });
  });

  it("a new member's entries name them at once; a removed member's keep their author for admins", async () => {
    await history(''); // this instance's copy of the users, without the member below
    const extra = await s.call('POST', '/members', {
      body: { email: 'leaver@example.com', name: 'Lee Leaver', connectionIds: [conn] },
    });
    const key = (
      await s.call('POST', `/members/${extra.body.data.id}/keys`, { body: { name: 'l', scopes: ['query'] } })
    ).body.data.key as string;
    const sql = 'SELECT 1 AS leaver';
    expect((await s.call('POST', `/connections/${conn}/query`, { body: { sql }, key })).status).toBe(200);
    // The author is known at once, although this instance's copy of the users predates the member.
    const before = await history('?source=query&pageSize=1');
    expect(before.body.data[0]).toMatchObject({ sql, author: { name: 'Lee Leaver', removed: false } });
    expect((await s.call('DELETE', `/members/${extra.body.data.id}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_050)); // this instance's copy of the users expires
    const after = await history('?source=query&pageSize=1');
    expect(after.body.data[0]).toMatchObject({
      sql,
      author: { id: extra.body.data.id, name: 'Lee Leaver', email: 'leaver@example.com', removed: true },
    });
  });
});
