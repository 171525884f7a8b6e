import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { openTestDatabases, type TestDatabases } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `metric_orders_${suffix}`;

describe('metrics over HTTP with real databases', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  let conn: Record<string, string>;

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), inject('mariadb'), 'm.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (id int, total int)`);
    await dbs.pg.query(`INSERT INTO ${T} VALUES (1, 100), (2, 250), (3, 50)`);
    if (dbs.maria) {
      await dbs.maria.query(`CREATE TABLE ${T} (id INT, total INT)`);
      await dbs.maria.query(`INSERT INTO ${T} VALUES (1, 7), (2, 8)`);
    }
    dbs.sqlite.exec(`CREATE TABLE ${T} (id INTEGER, total INTEGER); INSERT INTO ${T} VALUES (1, 5), (2, 6);`);
    conn = await dbs.connect(s);
  });

  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  let n = 0;
  const create = (over: Record<string, unknown> = {}, key?: string) =>
    s.call('POST', '/metrics', {
      key,
      body: {
        name: `m-${++n}-${suffix}`,
        formula: `SELECT sum(total) FROM ${T}`,
        connectionId: conn.POSTGRES,
        ...over,
      },
    });
  const metric = async (over: Record<string, unknown> = {}) => {
    const r = await create(over);
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const value = (id: string, q = '', key?: string) => s.call('GET', `/metrics/${id}/value${q}`, { key });

  it('creates a metric with nullable fields and reads it back', async () => {
    const m = await metric({ description: 'Revenue', unit: 'USD', dimensions: 'region' });
    expect(m).toEqual({
      id: expect.any(String),
      orgId: s.app.orgId,
      name: expect.stringMatching(/^m-/),
      description: 'Revenue',
      formula: `SELECT sum(total) FROM ${T}`,
      connectionId: conn.POSTGRES,
      unit: 'USD',
      dimensions: 'region',
      createdBy: s.app.adminUserId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await s.call('GET', `/metrics/${m.id}`)).body.data).toEqual(m);
    const bare = await metric({ connectionId: undefined });
    expect(bare).toMatchObject({ connectionId: null, unit: null, description: null, dimensions: null });
  });

  it('evaluates the first column of the first row from real data', async () => {
    const m = await metric({
      unit: 'USD',
      formula: `SELECT sum(total) AS revenue, count(*) AS orders FROM ${T}`,
    });
    const r = await value(m.id);
    expect(r.status, r.text).toBe(200);
    expect(Number(r.body.data.value)).toBe(400);
    expect(r.body.data.unit).toBe('USD');
    expect(Date.parse(r.body.data.asOf)).not.toBeNaN();
    expect(typeof r.body.data.executionTime).toBe('number');
    expect(Object.keys(r.body.data).sort()).toEqual(['asOf', 'executionTime', 'unit', 'value']);
  });

  it('evaluates on MariaDB and SQLite, and on an override connection', async () => {
    const m = await metric({ formula: `SELECT max(total) FROM ${T}`, connectionId: conn.SQLITE });
    expect((await value(m.id)).body.data.value).toBe(6);
    if (conn.MARIADB)
      expect(Number((await value(m.id, `?connectionId=${conn.MARIADB}`)).body.data.value)).toBe(8);
    expect(Number((await value(m.id, `?connectionId=${conn.POSTGRES}`)).body.data.value)).toBe(250);
  });

  it('returns null for a formula with no rows', async () => {
    const m = await metric({ formula: `SELECT total FROM ${T} WHERE id < 0` });
    const r = await value(m.id);
    expect(r.status).toBe(200);
    expect(r.body.data.value).toBeNull();
  });

  it('answers 422 QUERY_FAILED for a failing formula', async () => {
    const m = await metric({ formula: `SELECT sum(no_such_column) FROM ${T}` });
    const r = await value(m.id);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('QUERY_FAILED');
  });

  it('answers 400 when neither the metric nor the request names a connection, 404 for an unknown override', async () => {
    const m = await metric({ connectionId: null });
    const r = await value(m.id);
    expect(r.status).toBe(400);
    expect(r.body.error.details.issues[0].path).toBe('query.connectionId');
    expect((await value(m.id, `?connectionId=${conn.POSTGRES}`)).status).toBe(200);
    expect((await value(m.id, '?connectionId=nope')).status).toBe(404);
  });

  it('refuses write statements with READ_ONLY_VIOLATION at save time and on an override connection', async () => {
    const w = await create({ formula: `DELETE FROM ${T}` });
    expect(w.status).toBe(400);
    expect(w.body.error.code).toBe('READ_ONLY_VIOLATION');
    // without a connection the dialect is unknown at save time; evaluation refuses it
    const m = await metric({ connectionId: null, formula: `UPDATE ${T} SET total = 0` });
    const r = await value(m.id, `?connectionId=${conn.POSTGRES}`);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect((await dbs.pg.query(`SELECT sum(total)::int AS s FROM ${T}`)).rows[0].s).toBe(400);
    const u = await s.call('PATCH', `/metrics/${m.id}`, { body: { connectionId: conn.POSTGRES } });
    expect(u.status).toBe(400);
    expect(u.body.error.code).toBe('READ_ONLY_VIOLATION');
  });

  it('keeps names unique (409), renames safely, updates and deletes', async () => {
    const a = await metric({ name: `Revenue ${suffix}` });
    const dup = await create({ name: `REVENUE ${suffix}` });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('ALREADY_EXISTS');
    const b = await metric({ name: `Orders ${suffix}` });
    expect((await s.call('PATCH', `/metrics/${b.id}`, { body: { name: `revenue ${suffix}` } })).status).toBe(
      409,
    );
    const u = await s.call('PATCH', `/metrics/${a.id}`, {
      body: { name: `Income ${suffix}`, unit: 'EUR', formula: `SELECT min(total) FROM ${T}` },
    });
    expect(u.status, u.text).toBe(200);
    expect(u.body.data).toMatchObject({ name: `Income ${suffix}`, unit: 'EUR' });
    expect(Number((await value(a.id)).body.data.value)).toBe(50);
    expect((await create({ name: `Revenue ${suffix}` })).status).toBe(201);
    expect((await s.call('DELETE', `/metrics/${b.id}`)).body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/metrics/${b.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/metrics/${b.id}`)).status).toBe(404);
    expect((await create({ name: `Orders ${suffix}` })).status).toBe(201);
  });

  it('lists with pagination', async () => {
    await metric();
    await metric();
    const all = await s.call('GET', '/metrics?pageSize=100');
    const total = all.body.meta.pagination.total;
    expect(total).toBe(all.body.data.length);
    const p = await s.call('GET', '/metrics?page=2&pageSize=1');
    expect(p.body.data).toHaveLength(1);
    expect(p.body.data[0].id).toBe(all.body.data[1].id);
    expect(p.body.meta.pagination).toEqual({ total, page: 2, pageSize: 1, totalPages: total });
  });

  it('validates bodies with field paths', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '' }, 'body.name'],
      [{ formula: undefined }, 'body.formula'],
      [{ unit: 5 }, 'body.unit'],
      [{ connectionId: '' }, 'body.connectionId'],
    ];
    for (const [over, path] of cases) {
      const r = await create(over);
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.body.error.details.issues.map((i: any) => i.path)).toContain(path);
    }
    const missing = await create({ connectionId: 'no-such' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.details.path).toBe('body.connectionId');
  });

  it("isolates organizations: another organization's metrics are 404 on every route", async () => {
    const m = await metric({ name: `iso ${suffix}` });
    const other = await createOrganization({
      name: 'Other metrics',
      adminEmail: `m-${suffix}@other.example`,
    });
    const key = other.key;
    expect((await s.call('GET', `/metrics/${m.id}`, { key })).status).toBe(404);
    expect((await s.call('PATCH', `/metrics/${m.id}`, { key, body: { unit: 'x' } })).status).toBe(404);
    expect((await s.call('DELETE', `/metrics/${m.id}`, { key })).status).toBe(404);
    expect((await value(m.id, '', key)).status).toBe(404);
    expect((await s.call('GET', '/metrics', { key })).body.data).toEqual([]);
    // the other organization may reuse the name but not this organization's connection
    const own = await create({ name: `iso ${suffix}`, connectionId: null }, key);
    expect(own.status).toBe(201);
    expect((await value(own.body.data.id, `?connectionId=${conn.POSTGRES}`, key)).status).toBe(404);
    expect((await create({ connectionId: conn.POSTGRES }, key)).status).toBe(404);
  });

  it('lets members read metrics and evaluate them only on assigned connections; only creator or admin change them', async () => {
    const mem = await s.call('POST', '/members', {
      body: { email: `metric-member-${suffix}@example.com`, name: 'M', connectionIds: [conn.SQLITE] },
    });
    const key = (
      await s.call('POST', `/members/${mem.body.data.id}/keys`, { body: { name: 'm', scopes: ['query'] } })
    ).body.data.key as string;
    // A metric on a connection the member is not assigned to is hidden like the connection (404, no formula).
    const hidden = await metric();
    const read = await s.call('GET', `/metrics/${hidden.id}`, { key });
    expect(read.status).toBe(404);
    expect(read.text).not.toContain(T);
    expect((await value(hidden.id, '', key)).status).toBe(404);
    expect((await value(hidden.id, `?connectionId=${conn.SQLITE}`, key)).status).toBe(404);
    const list = await s.call('GET', '/metrics?pageSize=100', { key });
    expect(list.body.data.map((x: { id: string }) => x.id)).not.toContain(hidden.id);
    // Without a connection of its own it is shared, and evaluates on an assigned connection.
    const m = await metric({ connectionId: null });
    expect((await s.call('GET', `/metrics/${m.id}`, { key })).status).toBe(200);
    expect((await value(m.id, '', key)).status).toBe(400);
    expect((await value(m.id, `?connectionId=${conn.SQLITE}`, key)).body.data.value).toBe(11);
    expect((await s.call('PATCH', `/metrics/${m.id}`, { key, body: { unit: 'x' } })).status).toBe(403);
    expect((await s.call('DELETE', `/metrics/${m.id}`, { key })).status).toBe(403);
    const dashOnly = (await s.call('POST', '/keys', { body: { name: 'd', scopes: ['dashboards'] } })).body
      .data.key;
    expect((await s.call('GET', '/metrics', { key: dashOnly })).status).toBe(403);
  });
});
