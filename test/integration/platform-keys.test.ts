import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { startTestServer, type TestServer } from '../support/server';

describe('API keys and members', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('creates a key and shows the full key only in the creation answer', async () => {
    const r = await s.call('POST', '/keys', {
      body: { name: 'reporting', scopes: ['query', 'dashboards'], expiresAt: '2099-01-01T00:00:00Z' },
    });
    expect(r.status).toBe(201);
    const k = r.body.data;
    expect(k.key).toMatch(/^lp_[0-9A-Za-z]{40,}$/);
    expect(k.keyPrefix).toBe(k.key.slice(0, 11));
    expect(k.scopes).toBe('["query","dashboards"]');
    expect(k.expiresAt).toBe('2099-01-01T00:00:00Z');
    const list = await s.call('GET', '/keys?pageSize=100');
    expect(list.text).not.toContain(k.key);
    const listed = list.body.data.find((x: any) => x.id === k.id);
    expect(listed).toMatchObject({
      name: 'reporting',
      keyPrefix: k.keyPrefix,
      scopes: '["query","dashboards"]',
    });
    expect(listed.key).toBeUndefined();
    expect(listed.keyHash).toBeUndefined();
  });

  it('defaults scopes to ["*"]', async () => {
    const r = await s.call('POST', '/keys', { body: { name: 'all' } });
    expect(r.body.data.scopes).toBe('["*"]');
  });

  it('refuses an expiry in the past', async () => {
    const r = await s.call('POST', '/keys', { body: { name: 'old', expiresAt: '2001-01-01T00:00:00Z' } });
    expect(r.status).toBe(400);
    expect(r.body.error.details.issues[0].path).toBe('body.expiresAt');
  });

  it('does not let a key grant scopes it does not hold', async () => {
    const admin = await s.call('POST', '/keys', { body: { name: 'admin only', scopes: ['admin'] } });
    const r = await s.call('POST', '/keys', {
      key: admin.body.data.key,
      body: { name: 'escalate', scopes: ['*'] },
    });
    expect(r.status).toBe(403);
    const ok = await s.call('POST', '/keys', {
      key: admin.body.data.key,
      body: { name: 'same', scopes: ['admin'] },
    });
    expect(ok.status).toBe(201);
  });

  it('hides revoked keys from the list and 404s a second revocation', async () => {
    const k = await s.call('POST', '/keys', { body: { name: 'to revoke' } });
    expect((await s.call('DELETE', `/keys/${k.body.data.id}`)).status).toBe(200);
    const list = await s.call('GET', '/keys?pageSize=100');
    expect(list.body.data.map((x: any) => x.id)).not.toContain(k.body.data.id);
    expect((await s.call('DELETE', `/keys/${k.body.data.id}`)).status).toBe(404);
  });

  it('refuses to let the last admin key revoke itself', async () => {
    const org = await createOrganization({ name: 'Solo', adminEmail: 'solo@example.com' });
    const r = await s.call('DELETE', `/keys/${org.keyId}`, { key: org.key });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
    expect((await s.call('GET', '/', { key: org.key })).status).toBe(200);
    const second = await s.call('POST', '/keys', { key: org.key, body: { name: 'second admin' } });
    expect((await s.call('DELETE', `/keys/${org.keyId}`, { key: org.key })).status).toBe(200);
    expect((await s.call('GET', '/', { key: second.body.data.key })).status).toBe(200);
  });

  it('manages members: create, duplicate email 409, get, update, list', async () => {
    const conn = async (name: string) =>
      (await s.call('POST', '/connections', { body: { name, type: 'SQLITE', database: `${name}.db` } })).body
        .data.id as string;
    const [c1, c2, c3] = [await conn('c1'), await conn('c2'), await conn('c3')];
    const created = await s.call('POST', '/members', {
      body: { email: 'Analyst@Example.com', name: 'Analyst', connectionIds: [c1, c1, c2] },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ email: 'analyst@example.com', role: 'member' });
    const dup = await s.call('POST', '/members', { body: { email: 'analyst@example.com', name: 'Again' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('ALREADY_EXISTS');
    const id = created.body.data.id;
    const upd = await s.call('PATCH', `/members/${id}`, {
      body: { role: 'admin', connectionIds: [c3, c3] },
    });
    expect(upd.body.data).toMatchObject({ role: 'admin', connectionIds: [c3] });
    expect((await s.call('GET', `/members/${id}`)).body.data.name).toBe('Analyst');
    const bad = await s.call('PATCH', `/members/${id}`, { body: { role: 'owner' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.issues[0].path).toBe('body.role');
  });

  it('member connectionIds must be connections of the organization (400 otherwise, nothing stored)', async () => {
    const own = (
      await s.call('POST', '/connections', { body: { name: 'mine', type: 'SQLITE', database: 'm.db' } })
    ).body.data.id as string;
    const other = await createOrganization({ name: 'Elsewhere', adminEmail: 'admin@elsewhere.example' });
    const foreign = (
      await s.call('POST', '/connections', {
        key: other.key,
        body: { name: 'theirs', type: 'SQLITE', database: 't.db' },
      })
    ).body.data.id as string;
    for (const ids of [[foreign], [own, foreign], ['no-such-connection'], [own, 'x'.repeat(100)]]) {
      const r = await s.call('POST', '/members', {
        body: { email: `m-${ids.length}-${Math.random()}@example.com`, name: 'M', connectionIds: ids },
      });
      expect(r.status, JSON.stringify(ids)).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
      expect(r.body.error.details.issues[0].path).toBe(
        `body.connectionIds.${ids.indexOf(ids.find((i) => i !== own) as string)}`,
      );
    }
    const m = await s.call('POST', '/members', {
      body: { email: 'scoped@example.com', name: 'Scoped', connectionIds: [own] },
    });
    expect(m.status).toBe(201);
    const patch = await s.call('PATCH', `/members/${m.body.data.id}`, {
      body: { connectionIds: [own, foreign] },
    });
    expect(patch.status).toBe(400);
    expect((await s.call('GET', `/members/${m.body.data.id}`)).body.data.connectionIds).toEqual([own]);
  });

  it('keeps at least one admin', async () => {
    const org = await createOrganization({ name: 'One admin', adminEmail: 'only@example.com' });
    const r = await s.call('PATCH', `/members/${org.userId}`, { key: org.key, body: { role: 'member' } });
    expect(r.status).toBe(400);
    expect((await s.call('DELETE', `/members/${org.userId}`, { key: org.key })).status).toBe(400);
  });
});
