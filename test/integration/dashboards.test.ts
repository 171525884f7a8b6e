import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { db } from '../../shared/platform/db/store';
import { createConnection, postgresConnection } from '../support/connections';
import { startTestServer, type TestServer } from '../support/server';

const suffix = randomBytes(4).toString('hex');

/** Dashboard and widget CRUD, validation, cascade delete, visibility and organization isolation. */
describe('dashboards and widgets over HTTP', () => {
  let s: TestServer;
  let pgConn: string;
  const pgInfo = inject('postgres');

  beforeAll(async () => {
    s = await startTestServer();
    pgConn = await createConnection(s, postgresConnection(pgInfo));
  });
  afterAll(() => s?.stop());

  const dashboard = async (body: Record<string, unknown> = {}, key?: string) => {
    const r = await s.call('POST', '/dashboards', { key, body: { title: `Sales ${suffix}`, ...body } });
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };
  const widget = async (dashId: string, body: Record<string, unknown> = {}, key?: string) => {
    const r = await s.call('POST', `/dashboards/${dashId}/widgets`, {
      key,
      body: { type: 'TABLE', title: 'Rows', query: 'SELECT 1 AS one', connectionId: pgConn, ...body },
    });
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };

  it('creates a dashboard with defaults and reads it back with an empty widget list', async () => {
    const d = await dashboard({ description: 'Weekly numbers' });
    expect(d).toEqual({
      id: expect.any(String),
      orgId: s.app.orgId,
      title: `Sales ${suffix}`,
      description: 'Weekly numbers',
      isPublic: false,
      createdBy: s.app.adminUserId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      widgets: [],
    });
    expect((await s.call('GET', `/dashboards/${d.id}`)).body.data).toEqual(d);
  });

  it('creates widgets with defaults and embeds them ordered by position', async () => {
    const d = await dashboard();
    const w3 = await widget(d.id, { type: 'BAR', title: 'third', position: 3 });
    const w0 = await widget(d.id, { type: 'TEXT', title: 'note', query: undefined, connectionId: undefined });
    const w1 = await widget(d.id, {
      type: 'LINE',
      title: 'first',
      position: 1,
      width: 12,
      height: 8,
      config: '{"x":"day"}',
    });
    expect(w0).toEqual({
      id: expect.any(String),
      dashboardId: d.id,
      connectionId: null,
      type: 'TEXT',
      title: 'note',
      query: null,
      config: '{}',
      width: 6,
      height: 4,
      position: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(w1).toMatchObject({
      width: 12,
      height: 8,
      position: 1,
      config: '{"x":"day"}',
      connectionId: pgConn,
    });
    const got = await s.call('GET', `/dashboards/${d.id}`);
    expect(got.body.data.widgets.map((w: any) => w.id)).toEqual([w0.id, w1.id, w3.id]);
    const list = await s.call('GET', `/dashboards/${d.id}/widgets`);
    expect(list.body.data.map((w: any) => w.title)).toEqual(['note', 'first', 'third']);
    // moving a widget changes the order
    const moved = await s.call('PATCH', `/dashboards/${d.id}/widgets/${w3.id}`, {
      body: { position: 0, title: 'now first' },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data).toMatchObject({
      position: 0,
      title: 'now first',
      type: 'BAR',
      query: 'SELECT 1 AS one',
    });
    // equal positions keep creation order (w3 was created before w0)
    const again = await s.call('GET', `/dashboards/${d.id}/widgets`);
    expect(again.body.data.map((w: any) => w.id)).toEqual([w3.id, w0.id, w1.id]);
  });

  it('accepts every widget type', async () => {
    const d = await dashboard();
    for (const type of ['TABLE', 'METRIC', 'LINE', 'BAR', 'AREA', 'PIE', 'SCATTER', 'TEXT'])
      expect((await widget(d.id, { type, title: type })).type).toBe(type);
    expect((await s.call('GET', `/dashboards/${d.id}`)).body.data.widgets).toHaveLength(8);
  });

  it('validates dashboards and widgets with field paths', async () => {
    const bad = await s.call('POST', '/dashboards', { body: { title: '', isPublic: 'no' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues.map((i: any) => i.path).sort()).toEqual([
      'body.isPublic',
      'body.title',
    ]);
    const d = await dashboard();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'GAUGE' }, 'body.type'],
      [{ title: undefined }, 'body.title'],
      [{ config: '{not json' }, 'body.config'],
      [{ config: '[1,2]' }, 'body.config'],
      [{ config: '"text"' }, 'body.config'],
      [{ config: { a: 1 } }, 'body.config'],
      [{ config: '{"cacheSeconds": -1}' }, 'body.config'],
      [{ width: 0 }, 'body.width'],
      [{ width: 13 }, 'body.width'],
      [{ height: 1.5 }, 'body.height'],
      [{ position: -1 }, 'body.position'],
    ];
    for (const [over, path] of cases) {
      const r = await s.call('POST', `/dashboards/${d.id}/widgets`, {
        body: { type: 'TABLE', title: 't', ...over },
      });
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(
        r.body.error.details.issues.map((i: any) => i.path),
        JSON.stringify(over),
      ).toContain(path);
    }
    const w = await widget(d.id);
    const patch = await s.call('PATCH', `/dashboards/${d.id}/widgets/${w.id}`, { body: { config: 'nope' } });
    expect(patch.status).toBe(400);
    expect(patch.body.error.details.issues[0].path).toBe('body.config');
  });

  it('checks the widget connection on create and update: unknown is 404 naming the field', async () => {
    const d = await dashboard();
    const r = await s.call('POST', `/dashboards/${d.id}/widgets`, {
      body: { type: 'TABLE', title: 't', query: 'SELECT 1', connectionId: 'missing-connection' },
    });
    expect(r.status).toBe(404);
    expect(r.body.error.details.path).toBe('body.connectionId');
    const w = await widget(d.id);
    const u = await s.call('PATCH', `/dashboards/${d.id}/widgets/${w.id}`, {
      body: { connectionId: 'missing-connection' },
    });
    expect(u.status).toBe(404);
    expect(u.body.error.details.path).toBe('body.connectionId');
  });

  it('refuses write statements in a widget at save time with READ_ONLY_VIOLATION', async () => {
    const d = await dashboard();
    const r = await s.call('POST', `/dashboards/${d.id}/widgets`, {
      body: { type: 'TABLE', title: 't', query: 'DROP TABLE anything', connectionId: pgConn },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('READ_ONLY_VIOLATION');
    const w = await widget(d.id);
    const u = await s.call('PATCH', `/dashboards/${d.id}/widgets/${w.id}`, {
      body: { query: 'SELECT 1; DELETE FROM x' },
    });
    expect(u.status).toBe(400);
    expect(u.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect((await s.call('GET', `/dashboards/${d.id}/widgets`)).body.data[0].query).toBe('SELECT 1 AS one');
  });

  it('checks a stored query against the guard when a connection is attached later', async () => {
    const d = await dashboard();
    const w = await widget(d.id, { query: 'DELETE FROM anything', connectionId: undefined });
    const u = await s.call('PATCH', `/dashboards/${d.id}/widgets/${w.id}`, {
      body: { connectionId: pgConn },
    });
    expect(u.status).toBe(400);
    expect(u.body.error.code).toBe('READ_ONLY_VIOLATION');
    expect(u.body.error.details.path).toBe('body.query');
    expect((await s.call('GET', `/dashboards/${d.id}/widgets`)).body.data[0].connectionId).toBeNull();
  });

  it('updates a dashboard and lists dashboards with pagination and embedded widgets', async () => {
    const d = await dashboard();
    await widget(d.id);
    const u = await s.call('PATCH', `/dashboards/${d.id}`, {
      body: { title: 'Renamed', description: null, isPublic: true },
    });
    expect(u.status, u.text).toBe(200);
    expect(u.body.data).toMatchObject({ title: 'Renamed', description: null, isPublic: true });
    expect(u.body.data.widgets).toHaveLength(1);
    const all = await s.call('GET', '/dashboards?pageSize=100');
    const listed = all.body.data.find((x: any) => x.id === d.id);
    expect(listed.widgets).toHaveLength(1);
    const total = all.body.meta.pagination.total;
    const p2 = await s.call('GET', '/dashboards?page=2&pageSize=1');
    expect(p2.body.data).toHaveLength(1);
    expect(p2.body.meta.pagination).toEqual({ total, page: 2, pageSize: 1, totalPages: total });
    const beyond = await s.call('GET', `/dashboards?page=${total + 5}`);
    expect(beyond.body.data).toEqual([]);
    expect((await s.call('GET', '/dashboards?page=0')).status).toBe(400);
  });

  it('deletes a dashboard with every widget; widget routes then answer 404 and a repeat is 404', async () => {
    const d = await dashboard();
    const ws = [
      await widget(d.id),
      await widget(d.id, { type: 'PIE' }),
      await widget(d.id, { type: 'TEXT' }),
    ];
    // leave a cached result behind for one widget
    expect((await s.call('GET', `/dashboards/${d.id}/widgets/${ws[0].id}/data`)).status).toBe(200);
    expect(await db.get(`ORG#${s.app.orgId}`, `WCACHE#${ws[0].id}`)).toBeDefined();
    const del = await s.call('DELETE', `/dashboards/${d.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/dashboards/${d.id}`)).status).toBe(404);
    expect((await s.call('GET', `/dashboards/${d.id}/widgets`)).status).toBe(404);
    for (const w of ws) {
      expect((await s.call('GET', `/dashboards/${d.id}/widgets/${w.id}/data`)).status).toBe(404);
      expect(
        (await s.call('PATCH', `/dashboards/${d.id}/widgets/${w.id}`, { body: { title: 'x' } })).status,
      ).toBe(404);
      expect((await s.call('DELETE', `/dashboards/${d.id}/widgets/${w.id}`)).status).toBe(404);
    }
    const left = await db.query({ pk: `ORG#${s.app.orgId}`, prefix: `DASH#${d.id}` });
    expect(left).toEqual([]);
    expect(await db.get(`ORG#${s.app.orgId}`, `WCACHE#${ws[0].id}`)).toBeUndefined();
    expect((await s.call('DELETE', `/dashboards/${d.id}`)).status).toBe(404);
  });

  it('deletes a single widget', async () => {
    const d = await dashboard();
    const a = await widget(d.id);
    const b = await widget(d.id);
    expect((await s.call('DELETE', `/dashboards/${d.id}/widgets/${a.id}`)).body.data).toEqual({
      deleted: true,
    });
    expect((await s.call('GET', `/dashboards/${d.id}/widgets`)).body.data.map((w: any) => w.id)).toEqual([
      b.id,
    ]);
    expect((await s.call('DELETE', `/dashboards/${d.id}/widgets/${a.id}`)).status).toBe(404);
    // a widget id under another dashboard is not found
    const other = await dashboard();
    expect(
      (await s.call('PATCH', `/dashboards/${other.id}/widgets/${b.id}`, { body: { title: 'x' } })).status,
    ).toBe(404);
  });

  it("isolates organizations: another organization's dashboards and widgets are 404 on every route", async () => {
    const d = await dashboard({ isPublic: true });
    const w = await widget(d.id);
    const other = await createOrganization({
      name: 'Other dash',
      adminEmail: `dash-${suffix}@other.example`,
    });
    const key = other.key;
    const paths: Array<[string, string, unknown?]> = [
      ['GET', `/dashboards/${d.id}`],
      ['PATCH', `/dashboards/${d.id}`, { title: 'x' }],
      ['DELETE', `/dashboards/${d.id}`],
      ['GET', `/dashboards/${d.id}/widgets`],
      ['POST', `/dashboards/${d.id}/widgets`, { type: 'TABLE', title: 'x' }],
      ['PATCH', `/dashboards/${d.id}/widgets/${w.id}`, { title: 'x' }],
      ['DELETE', `/dashboards/${d.id}/widgets/${w.id}`],
      ['GET', `/dashboards/${d.id}/widgets/${w.id}/data`],
    ];
    for (const [method, path, body] of paths)
      expect((await s.call(method, path, { key, body })).status, `${method} ${path}`).toBe(404);
    expect((await s.call('GET', '/dashboards', { key })).body.data).toEqual([]);
    // its own dashboard cannot use this organization's connection
    const mine = await dashboard({}, key);
    const r = await s.call('POST', `/dashboards/${mine.id}/widgets`, {
      key,
      body: { type: 'TABLE', title: 'x', query: 'SELECT 1', connectionId: pgConn },
    });
    expect(r.status).toBe(404);
    expect((await s.call('GET', `/dashboards/${d.id}`)).body.data.widgets).toHaveLength(1);
  });

  it('shows private dashboards only to their creator and admins; shared ones change only by creator or admin', async () => {
    const m = await s.call('POST', '/members', {
      body: { email: `dash-member-${suffix}@example.com`, name: 'Member', connectionIds: [] },
    });
    const key = (
      await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'm', scopes: ['dashboards'] } })
    ).body.data.key as string;
    const priv = await dashboard();
    const pub = await dashboard({ isPublic: true });
    const w = await widget(pub.id);
    expect((await s.call('GET', `/dashboards/${priv.id}`, { key })).status).toBe(404);
    expect((await s.call('GET', `/dashboards/${pub.id}`, { key })).status).toBe(200);
    const listed = (await s.call('GET', '/dashboards?pageSize=100', { key })).body.data.map((x: any) => x.id);
    expect(listed).toContain(pub.id);
    expect(listed).not.toContain(priv.id);
    expect((await s.call('PATCH', `/dashboards/${pub.id}`, { key, body: { title: 'x' } })).status).toBe(403);
    expect((await s.call('DELETE', `/dashboards/${pub.id}`, { key })).status).toBe(403);
    expect(
      (await s.call('POST', `/dashboards/${pub.id}/widgets`, { key, body: { type: 'TEXT', title: 'x' } }))
        .status,
    ).toBe(403);
    // a widget on a connection the member is not assigned to is hidden like the connection: 404, no SQL text
    expect((await s.call('DELETE', `/dashboards/${pub.id}/widgets/${w.id}`, { key })).status).toBe(404);
    expect((await s.call('GET', `/dashboards/${pub.id}/widgets/${w.id}/data`, { key })).status).toBe(404);
    const seen = await s.call('GET', `/dashboards/${pub.id}`, { key });
    expect(seen.body.data.widgets.map((x: { id: string }) => x.id)).not.toContain(w.id);
    expect(seen.text).not.toContain(w.query);
    const widgets = await s.call('GET', `/dashboards/${pub.id}/widgets`, { key });
    expect(widgets.text).not.toContain(w.id);
    const listedAgain = await s.call('GET', '/dashboards?pageSize=100', { key });
    expect(listedAgain.text).not.toContain(w.id);
    expect(
      (await s.call('GET', `/dashboards/${pub.id}`)).body.data.widgets.map((x: { id: string }) => x.id),
    ).toContain(w.id);
    // its own private dashboard: visible to it and to admins, not to other members
    const own = await dashboard({}, key);
    expect((await s.call('GET', `/dashboards/${own.id}`)).status).toBe(200);
    expect((await s.call('PATCH', `/dashboards/${own.id}`, { key, body: { title: 'mine' } })).status).toBe(
      200,
    );
    // and it cannot attach a connection it does not see
    const r = await s.call('POST', `/dashboards/${own.id}/widgets`, {
      key,
      body: { type: 'TABLE', title: 'x', query: 'SELECT 1', connectionId: pgConn },
    });
    expect(r.status).toBe(404);
    expect(r.body.error.details.path).toBe('body.connectionId');
    const noScope = (await s.call('POST', '/keys', { body: { name: 'q', scopes: ['query'] } })).body.data.key;
    expect((await s.call('GET', '/dashboards', { key: noScope })).status).toBe(403);
  });
});
