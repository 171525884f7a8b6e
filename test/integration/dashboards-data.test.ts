import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { db } from '../../shared/platform/db/store';
import { openTestDatabases, type TestDatabases } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');
const T = `dash_sales_${suffix}`;
const SALES: Array<[string, number]> = [
  ['north', 10],
  ['south', 20],
  ['east', 30],
];

/** Widget data on real databases, the per-widget result cache and its invalidation. */
describe('widget data and the widget result cache', () => {
  let s: TestServer;
  let dbs: TestDatabases;
  let conn: Record<string, string>;
  let dashId: string;

  beforeAll(async () => {
    s = await startTestServer();
    dbs = await openTestDatabases(inject('postgres'), inject('mariadb'), 'sales.sqlite');
    await dbs.pg.query(`CREATE TABLE ${T} (region text, amount int)`);
    for (const [r, a] of SALES) await dbs.pg.query(`INSERT INTO ${T} VALUES ($1, $2)`, [r, a]);
    if (dbs.maria) {
      await dbs.maria.query(`CREATE TABLE ${T} (region VARCHAR(20), amount INT)`);
      for (const [r, a] of SALES) await dbs.maria.query(`INSERT INTO ${T} VALUES (?, ?)`, [r, a]);
    }
    dbs.sqlite.exec(`CREATE TABLE ${T} (region TEXT, amount INTEGER)`);
    for (const [r, a] of SALES) dbs.sqlite.prepare(`INSERT INTO ${T} VALUES (?, ?)`).run(r, a);

    conn = await dbs.connect(s);
    const d = await s.call('POST', '/dashboards', { body: { title: `Sales ${suffix}` } });
    dashId = d.body.data.id;
  });

  afterAll(async () => {
    await s?.stop();
    await dbs?.close(T);
  });

  const widget = async (body: Record<string, unknown>) => {
    const r = await s.call('POST', `/dashboards/${dashId}/widgets`, { body: { title: 'w', ...body } });
    expect(r.status, r.text).toBe(201);
    return r.body.data.id as string;
  };
  const data = (widgetId: string, query = '') =>
    s.call('GET', `/dashboards/${dashId}/widgets/${widgetId}/data${query}`);
  const addSale = async (region: string, amount: number) => {
    await dbs.pg.query(`INSERT INTO ${T} VALUES ($1, $2)`, [region, amount]);
  };

  it('returns the data of widgets of several types on PostgreSQL, MariaDB and SQLite', async () => {
    const specs: Array<[string, string, string]> = [
      ['TABLE', 'POSTGRES', `SELECT region, amount FROM ${T} WHERE amount <= 30 ORDER BY region`],
      ['BAR', 'MARIADB', `SELECT region, amount FROM ${T} ORDER BY region`],
      ['PIE', 'SQLITE', `SELECT region, amount FROM ${T} ORDER BY region`],
      ['METRIC', 'POSTGRES', `SELECT sum(amount) AS total FROM ${T} WHERE amount <= 30`],
      ['LINE', 'SQLITE', `SELECT region AS x, amount AS y FROM ${T} ORDER BY amount`],
    ];
    for (const [type, db, query] of specs) {
      if (!conn[db]) continue;
      const id = await widget({ type, query, connectionId: conn[db] });
      const r = await data(id);
      expect(r.status, `${type} ${db}: ${r.text}`).toBe(200);
      expect(r.body.data).toMatchObject({ cached: false, cachedAt: null, rowCount: expect.any(Number) });
      expect(typeof r.body.data.executionTime).toBe('number');
      if (type === 'METRIC') expect(Number(r.body.data.rows[0].total)).toBe(60);
      else if (type === 'LINE') expect(r.body.data.rows.map((x: any) => x.y)).toEqual([10, 20, 30]);
      else {
        expect(r.body.data.columns).toEqual(['region', 'amount']);
        expect(r.body.data.rows).toEqual([
          { region: 'east', amount: 30 },
          { region: 'north', amount: 10 },
          { region: 'south', amount: 20 },
        ]);
      }
    }
  });

  it('answers from the cache on the second read (even after the data changed) and records it in DynamoDB', async () => {
    const id = await widget({
      type: 'TABLE',
      query: `SELECT count(*) AS n FROM ${T}`,
      connectionId: conn.POSTGRES,
    });
    const first = await data(id);
    expect(first.body.data).toMatchObject({ cached: false, cachedAt: null });
    const n = Number(first.body.data.rows[0].n);
    await addSale('west', 1);
    const second = await data(id);
    expect(second.status).toBe(200);
    expect(second.body.data.cached).toBe(true);
    expect(Date.parse(second.body.data.cachedAt)).not.toBeNaN();
    expect(Number(second.body.data.rows[0].n)).toBe(n);
    const item = await db.get(`ORG#${s.app.orgId}`, `WCACHE#${id}`);
    expect(item).toMatchObject({ fingerprint: expect.any(String), cachedAt: second.body.data.cachedAt });
    expect(Number(item?.ttl)).toBeGreaterThan(Date.now() / 1000);
  });

  it('refresh=true skips the cache, runs the query now and replaces the cached result; a bad value is 400', async () => {
    const id = await widget({
      type: 'METRIC',
      query: `SELECT count(*) AS n FROM ${T}`,
      connectionId: conn.POSTGRES,
    });
    const first = await data(id);
    expect(first.body.data).toMatchObject({ cached: false, cachedAt: null });
    const n = Number(first.body.data.rows[0].n);
    await addSale('refresh', 2);
    const stale = await data(id);
    expect(stale.body.data.cached).toBe(true);
    expect(Number(stale.body.data.rows[0].n)).toBe(n);
    const fresh = await data(id, '?refresh=true');
    expect(fresh.status, fresh.text).toBe(200);
    expect(fresh.body.data).toMatchObject({ cached: false, cachedAt: null });
    expect(Number(fresh.body.data.rows[0].n)).toBe(n + 1);
    const item = await db.get<{ cachedAt: string; result: string }>(`ORG#${s.app.orgId}`, `WCACHE#${id}`);
    expect(Number(JSON.parse(item!.result).rows[0].n)).toBe(n + 1);
    const after = await data(id);
    expect(after.body.data).toMatchObject({ cached: true, cachedAt: item!.cachedAt });
    expect(Number(after.body.data.rows[0].n)).toBe(n + 1);
    // refresh=false is the plain read.
    expect((await data(id, '?refresh=false')).body.data.cached).toBe(true);
    for (const bad of [
      '?refresh=yes',
      '?refresh=1',
      '?refresh=TRUE',
      '?refresh=',
      '?refresh=true&refresh=true',
      '?fresh=true',
    ]) {
      const r = await data(id, bad);
      expect(r.status, `${bad}: ${r.text}`).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
    // Nothing changed the cached entry.
    expect(await db.get(`ORG#${s.app.orgId}`, `WCACHE#${id}`)).toMatchObject({ cachedAt: item!.cachedAt });
  });

  it('refresh=true keeps the access checks: another organization and an unassigned member get 404', async () => {
    const id = await widget({ type: 'TABLE', query: 'SELECT 1 AS one', connectionId: conn.POSTGRES });
    const path = `/dashboards/${dashId}/widgets/${id}/data?refresh=true`;
    expect((await s.call('GET', path)).status).toBe(200);
    const m = await s.call('POST', '/members', {
      body: { email: `refresh-member-${suffix}@example.com`, name: 'R', connectionIds: [conn.SQLITE] },
    });
    const key = (
      await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'r', scopes: ['dashboards'] } })
    ).body.data.key as string;
    expect((await s.call('GET', path, { key })).status).toBe(404);
    const other = await createOrganization({
      name: 'Other refresh',
      adminEmail: `refresh-${suffix}@other.example`,
    });
    expect((await s.call('GET', path, { key: other.key })).status).toBe(404);
  });

  it('drops the cached result when the widget query changes, but not for a title or position change', async () => {
    const id = await widget({
      type: 'TABLE',
      query: `SELECT count(*) AS n FROM ${T}`,
      connectionId: conn.POSTGRES,
    });
    await data(id);
    await s.call('PATCH', `/dashboards/${dashId}/widgets/${id}`, { body: { title: 'renamed', position: 4 } });
    expect((await data(id)).body.data.cached).toBe(true);
    await s.call('PATCH', `/dashboards/${dashId}/widgets/${id}`, {
      body: { query: `SELECT count(*) AS n, max(amount) AS top FROM ${T}` },
    });
    const fresh = await data(id);
    expect(fresh.body.data.cached).toBe(false);
    expect(fresh.body.data.columns).toEqual(['n', 'top']);
    expect((await data(id)).body.data.cached).toBe(true);
  });

  it('drops the cached result when the widget connection changes', async () => {
    const id = await widget({
      type: 'TABLE',
      query: `SELECT count(*) AS n FROM ${T}`,
      connectionId: conn.POSTGRES,
    });
    await addSale('pg-only', 2);
    const pgCount = Number((await data(id)).body.data.rows[0].n);
    expect((await data(id)).body.data.cached).toBe(true);
    const moved = await s.call('PATCH', `/dashboards/${dashId}/widgets/${id}`, {
      body: { connectionId: conn.SQLITE },
    });
    expect(moved.status, moved.text).toBe(200);
    const r = await data(id);
    expect(r.body.data.cached).toBe(false);
    expect(Number(r.body.data.rows[0].n)).toBe(SALES.length);
    expect(Number(r.body.data.rows[0].n)).not.toBe(pgCount);
  });

  it('does not cache when config.cacheSeconds is 0, and expires after config.cacheSeconds', async () => {
    const off = await widget({
      type: 'TABLE',
      query: 'SELECT 1 AS one',
      connectionId: conn.POSTGRES,
      config: '{"cacheSeconds": 0}',
    });
    const a = await data(off);
    const b = await data(off);
    expect([a.body.data.cached, b.body.data.cached]).toEqual([false, false]);
    expect(b.body.data.cacheSkipped).toBe('DISABLED');
    expect(await db.get(`ORG#${s.app.orgId}`, `WCACHE#${off}`)).toBeUndefined();

    const short = await widget({
      type: 'TABLE',
      query: 'SELECT 2 AS two',
      connectionId: conn.POSTGRES,
      config: '{"cacheSeconds": 1}',
    });
    await data(short);
    await new Promise((r) => setTimeout(r, 1200));
    expect((await data(short)).body.data.cached).toBe(false);
  });

  it('does not cache a result whose JSON exceeds 350 KB, and says so', async () => {
    const id = await widget({
      type: 'TABLE',
      query: "SELECT repeat('x', 1000) AS s FROM generate_series(1, 400)",
      connectionId: conn.POSTGRES,
    });
    const a = await data(id);
    expect(a.status, a.text.slice(0, 300)).toBe(200);
    expect(a.body.data).toMatchObject({ cached: false, cacheSkipped: 'TOO_LARGE', rowCount: 400 });
    expect((await data(id)).body.data.cached).toBe(false);
  });

  it('answers 400 for a widget without a query or a connection', async () => {
    const text = await widget({ type: 'TEXT', config: '{"markdown":"# hi"}' });
    const r = await data(text);
    expect(r.status).toBe(400);
    expect(r.body.error.details.issues.map((i: any) => i.path)).toEqual([
      'widget.query',
      'widget.connectionId',
    ]);
    const noConn = await widget({ type: 'TABLE', query: 'SELECT 1' });
    expect((await data(noConn)).status).toBe(400);
  });

  it('answers 422 QUERY_FAILED when the widget query fails, and caches nothing', async () => {
    const id = await widget({
      type: 'TABLE',
      query: 'SELECT * FROM no_such_table_here',
      connectionId: conn.POSTGRES,
    });
    const r = await data(id);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('QUERY_FAILED');
    expect(await db.get(`ORG#${s.app.orgId}`, `WCACHE#${id}`)).toBeUndefined();
  });

  it('checks connection visibility before answering from the cache', async () => {
    const d = await s.call('POST', '/dashboards', { body: { title: 'shared', isPublic: true } });
    const r = await s.call('POST', `/dashboards/${d.body.data.id}/widgets`, {
      body: { type: 'TABLE', title: 'w', query: 'SELECT 1 AS one', connectionId: conn.POSTGRES },
    });
    const wid = r.body.data.id;
    const path = `/dashboards/${d.body.data.id}/widgets/${wid}/data`;
    expect((await s.call('GET', path)).status).toBe(200);
    expect((await s.call('GET', path)).body.data.cached).toBe(true);
    const m = await s.call('POST', '/members', {
      body: { email: `data-member-${suffix}@example.com`, name: 'M', connectionIds: [conn.SQLITE] },
    });
    const key = (
      await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'm', scopes: ['dashboards'] } })
    ).body.data.key as string;
    expect((await s.call('GET', path, { key })).status).toBe(404);
    await s.call('PATCH', `/members/${m.body.data.id}`, {
      body: { connectionIds: [conn.SQLITE, conn.POSTGRES] },
    });
    const ok = await s.call('GET', path, { key });
    expect(ok.status).toBe(200);
    expect(ok.body.data.cached).toBe(true);
  });
});
