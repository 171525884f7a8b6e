import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { db } from '../../shared/platform/db/store';
import { startTestServer, type TestServer } from '../support/server';

const SECRET = 'crud-Pa55word-never-returned';

const pgBody = (over: Record<string, unknown> = {}) => ({
  name: 'Warehouse',
  type: 'POSTGRES',
  host: 'db.example.internal',
  port: 5432,
  database: 'analytics',
  username: 'reader',
  password: SECRET,
  ...over,
});

describe('connection CRUD, validation, visibility and isolation', () => {
  let s: TestServer;
  const logs: string[] = [];
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  const create = async (over: Record<string, unknown> = {}) => {
    const r = await s.call('POST', '/connections', { body: pgBody(over) });
    logs.push(r.text);
    expect(r.status, r.text).toBe(201);
    return r.body.data;
  };

  it('creates a connection and returns the sanitized record with defaults', async () => {
    const r = await s.call('POST', '/connections', { body: pgBody() });
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({
      id: expect.any(String),
      name: 'Warehouse',
      type: 'POSTGRES',
      host: 'db.example.internal',
      port: 5432,
      database: 'analytics',
      username: 'reader',
      sslEnabled: false,
      readOnly: true,
      allowedFunctions: [],
      isActive: true,
      lastTestedAt: null,
      lastError: null,
      lastErrorDiagnosis: null,
      schemaUpdatedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(r.text).not.toContain(SECRET);
  });

  it('accepts the aliases encryptedPassword and ssl', async () => {
    const c = await create({ password: undefined, encryptedPassword: SECRET, ssl: true });
    expect(c.sslEnabled).toBe(true);
    const r = await s.call('POST', '/connections', {
      body: pgBody({ sslEnabled: true, ssl: false }),
    });
    expect(r.status).toBe(400);
    expect(r.body.error.details.issues[0].path).toBe('body.ssl');
  });

  it('stores the password only as ciphertext bound to the connection', async () => {
    const c = await create();
    const item = await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`);
    expect(JSON.stringify(item)).not.toContain(SECRET);
    expect(typeof item?.passwordCipher).toBe('string');
    expect(item?.version).toBe(1);
  });

  it('validates fields by database type', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { type: 'SQLITE', host: 'x', database: '/tmp/a.sqlite', password: undefined, port: undefined },
        'body.host',
      ],
      [
        { type: 'SQLITE', host: undefined, port: undefined, password: undefined, database: '/tmp/a.sqlite' },
        'body.database',
      ],
      [
        { type: 'SQLITE', host: undefined, port: undefined, password: undefined, database: '../other/a.db' },
        'body.database',
      ],
      [
        {
          type: 'SQLITE',
          host: undefined,
          port: undefined,
          password: undefined,
          database: 's3://some-bucket/a.db',
        },
        'body.database',
      ],
      [
        { type: 'SQLITE', host: undefined, port: undefined, password: undefined, database: undefined },
        'body.database',
      ],
      [{ type: 'SQLITE', host: undefined, port: undefined, database: '/tmp/a.sqlite' }, 'body.password'],
      [{ host: undefined }, 'body.host'],
      [{ database: undefined }, 'body.database'],
      [{ username: undefined }, 'body.username'],
      [{ port: 70000 }, 'body.port'],
      [{ port: 0 }, 'body.port'],
      [{ type: 'ORACLE' }, 'body.type'],
      [{ host: 'postgres://db.example' }, 'body.host'],
      [{ name: '' }, 'body.name'],
    ];
    for (const [over, path] of cases) {
      const r = await s.call('POST', '/connections', { body: pgBody(over) });
      expect(r.status, JSON.stringify(over)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(
        r.body.error.details.issues.map((i: { path: string }) => i.path),
        JSON.stringify(over),
      ).toContain(path);
    }
    const sqlite = await s.call('POST', '/connections', {
      body: { name: 'file', type: 'SQLITE', database: 'some.sqlite' },
    });
    expect(sqlite.status).toBe(201);
    expect(sqlite.body.data).toMatchObject({
      host: '',
      port: null,
      username: '',
      database: 'some.sqlite',
    });
    const mongo = await s.call('POST', '/connections', {
      body: { name: 'docs', type: 'MONGODB', host: 'mongo.example', database: 'app' },
    });
    expect(mongo.status).toBe(201);
  });

  it('gets, lists with pagination, and 404s unknown ids', async () => {
    const c = await create({ name: 'Listed' });
    const g = await s.call('GET', `/connections/${c.id}`);
    expect(g.status).toBe(200);
    expect(g.body.data.name).toBe('Listed');
    const all = await s.call('GET', '/connections?pageSize=100');
    expect(all.body.data.map((x: { id: string }) => x.id)).toContain(c.id);
    const total = all.body.meta.pagination.total;
    const p2 = await s.call('GET', '/connections?page=2&pageSize=2');
    expect(p2.body.meta.pagination).toEqual({
      total,
      page: 2,
      pageSize: 2,
      totalPages: Math.ceil(total / 2),
    });
    expect(p2.body.data).toEqual(all.body.data.slice(2, 4));
    expect((await s.call('GET', '/connections/not-a-connection')).status).toBe(404);
    expect((await s.call('GET', '/connections?pageSize=101')).status).toBe(400);
  });

  it('updates fields, bumps the version only when connecting changes, and re-validates the merge', async () => {
    const c = await create();
    const renamed = await s.call('PATCH', `/connections/${c.id}`, {
      body: { name: 'Renamed', readOnly: false },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({
      name: 'Renamed',
      readOnly: false,
      host: 'db.example.internal',
    });
    let item = await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`);
    expect(item?.version).toBe(1);
    const before = item?.passwordCipher;
    const moved = await s.call('PATCH', `/connections/${c.id}`, {
      body: { host: 'db2.example.internal', password: 'another-Secret-9' },
    });
    expect(moved.status).toBe(200);
    expect(moved.text).not.toContain('another-Secret-9');
    item = await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`);
    expect(item?.version).toBe(2);
    expect(item?.passwordCipher).not.toBe(before);
    const bad = await s.call('PATCH', `/connections/${c.id}`, { body: { type: 'SQLITE' } });
    expect(bad.status).toBe(400);
    const toSqlite = await s.call('PATCH', `/connections/${c.id}`, {
      body: { type: 'SQLITE', host: null, port: null, password: null, username: null, database: 'x.db' },
    });
    expect(toSqlite.status, toSqlite.text).toBe(200);
    expect(toSqlite.body.data).toMatchObject({ type: 'SQLITE', host: '', port: null });
    expect((await s.call('PATCH', '/connections/nope', { body: { name: 'x' } })).status).toBe(404);
  });

  it('PATCH isActive false and true moves the state; the health-check entry is its own item, never the connection', async () => {
    const c = await create();
    const entry = () => db.get(`ORG#${s.app.orgId}#CONN#${c.id}`, 'HEALTH');
    expect(await entry()).toMatchObject({ gsi1pk: 'ACTIVECONN', orgId: s.app.orgId, id: c.id });
    const off = await s.call('PATCH', `/connections/${c.id}`, { body: { isActive: false } });
    expect(off.body.data.isActive).toBe(false);
    let item = await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`);
    expect(item?.gsi1pk).toBeUndefined();
    expect(item?.deactivatedBy).toBe('user');
    const on = await s.call('PATCH', `/connections/${c.id}`, { body: { isActive: true } });
    expect(on.body.data.isActive).toBe(true);
    item = await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`);
    expect(item?.gsi1pk).toBeUndefined();
    expect(await entry()).toMatchObject({ gsi1pk: 'ACTIVECONN', gsi1sk: `ORG#${s.app.orgId}#CONN#${c.id}` });
  });

  it('deletes with a cascade, and a second delete is 404', async () => {
    const c = await create();
    const ann = await s.call('POST', `/connections/${c.id}/annotations`, {
      body: { tableName: 'orders', annotation: 'One row per order' },
    });
    expect(ann.status).toBe(201);
    await db.put({ pk: `ORG#${s.app.orgId}`, sk: `CONNSCHEMA#${c.id}`, schemaUpdatedAt: 'x' });
    const d = await s.call('DELETE', `/connections/${c.id}`);
    expect(d.status).toBe(200);
    expect(d.body.data).toEqual({ deleted: true });
    expect((await s.call('GET', `/connections/${c.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/connections/${c.id}`)).status).toBe(404);
    expect(await db.query({ pk: `ORG#${s.app.orgId}#CONN#${c.id}` })).toEqual([]);
    expect(await db.get(`ORG#${s.app.orgId}`, `CONNSCHEMA#${c.id}`)).toBeUndefined();
  });

  it('finishes an interrupted delete cascade when DELETE is repeated', async () => {
    const c = await create();
    await s.call('POST', `/connections/${c.id}/annotations`, {
      body: { tableName: 'orders', annotation: 'kept until the cascade finishes' },
    });
    await db.patch(`ORG#${s.app.orgId}`, `CONN#${c.id}`, { deletingAt: new Date().toISOString() });
    expect((await s.call('GET', `/connections/${c.id}`)).status).toBe(404);
    expect((await s.call('DELETE', `/connections/${c.id}`)).status).toBe(200);
    expect(await db.get(`ORG#${s.app.orgId}`, `CONN#${c.id}`)).toBeUndefined();
    expect(await db.query({ pk: `ORG#${s.app.orgId}#CONN#${c.id}` })).toEqual([]);
  });

  it('members see only assigned connections, others are 404, and members cannot write', async () => {
    const mine = await create({ name: 'Assigned' });
    const other = await create({ name: 'Not assigned' });
    const m = await s.call('POST', '/members', {
      body: { email: 'member-crud@example.com', name: 'M', role: 'member', connectionIds: [mine.id] },
    });
    expect(m.status).toBe(201);
    const k = await s.call('POST', `/members/${m.body.data.id}/keys`, { body: { name: 'member key' } });
    const key = k.body.data.key as string;
    const list = await s.call('GET', '/connections', { key });
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([mine.id]);
    expect(list.body.meta.pagination.total).toBe(1);
    expect((await s.call('GET', `/connections/${mine.id}`, { key })).status).toBe(200);
    expect((await s.call('GET', `/connections/${other.id}`, { key })).status).toBe(404);
    expect((await s.call('GET', `/connections/${other.id}/annotations`, { key })).status).toBe(404);
    expect((await s.call('GET', `/connections/${other.id}/queries`, { key })).status).toBe(404);
    expect((await s.call('POST', '/connections', { key, body: pgBody() })).status).toBe(403);
    expect((await s.call('PATCH', `/connections/${mine.id}`, { key, body: { name: 'x' } })).status).toBe(403);
    expect((await s.call('DELETE', `/connections/${mine.id}`, { key })).status).toBe(403);
  });

  it('requires the connections scope (and query scope for history)', async () => {
    const c = await create();
    const k = await s.call('POST', '/keys', { body: { name: 'query only', scopes: ['query'] } });
    const key = k.body.data.key as string;
    expect((await s.call('GET', '/connections', { key })).status).toBe(403);
    expect((await s.call('GET', `/connections/${c.id}/queries`, { key })).status).toBe(200);
    const k2 = await s.call('POST', '/keys', { body: { name: 'connections only', scopes: ['connections'] } });
    expect((await s.call('GET', `/connections/${c.id}/queries`, { key: k2.body.data.key })).status).toBe(403);
  });

  it("reports another organization's connections as not found", async () => {
    const c = await create();
    const other = await createOrganization({ name: 'Other org', adminEmail: 'admin@other.example' });
    const key = other.key;
    expect((await s.call('GET', `/connections/${c.id}`, { key })).status).toBe(404);
    expect((await s.call('PATCH', `/connections/${c.id}`, { key, body: { name: 'x' } })).status).toBe(404);
    expect((await s.call('DELETE', `/connections/${c.id}`, { key })).status).toBe(404);
    expect((await s.call('GET', `/connections/${c.id}/annotations`, { key })).status).toBe(404);
    expect((await s.call('GET', '/connections', { key })).body.data).toEqual([]);
    expect((await s.call('GET', `/connections/${c.id}`)).status).toBe(200);
  });

  it('never returns the password in any response', () => {
    for (const text of logs) expect(text).not.toContain(SECRET);
  });
});
