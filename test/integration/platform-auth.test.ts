import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../shared/auth/bootstrap';
import { generateKey } from '../../shared/auth/key-material';
import { authStore } from '../../shared/auth/store';
import { db } from '../../shared/platform/db/store';
import { startTestServer, type TestServer } from '../support/server';

describe('authentication and authorization', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  const status = async (key: string | null, path = '/keys', headers?: Record<string, string>) =>
    (await s.call('GET', path, { key, headers })).status;

  it('refuses a missing key', async () => {
    expect(await status(null)).toBe(401);
  });

  it('refuses a malformed Authorization header', async () => {
    expect(await status(null, '/keys', { authorization: 'Basic abc' })).toBe(401);
    expect(await status(null, '/keys', { authorization: `Bearer ${s.adminKey} extra` })).toBe(401);
    expect(await status('not-a-loupe-key')).toBe(401);
  });

  it('refuses a well-formed but unknown key', async () => {
    expect(await status(generateKey())).toBe(401);
  });

  it('refuses an expired key', async () => {
    const { key } = await authStore.createKey(s.app.orgId, s.app.adminUserId, {
      name: 'expired',
      scopes: ['*'],
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    const r = await s.call('GET', '/keys', { key });
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/expired/i);
  });

  it('refuses a revoked key at once', async () => {
    const created = await s.call('POST', '/keys', { body: { name: 'short-lived' } });
    expect(created.status).toBe(201);
    const key = created.body.data.key;
    expect(await status(key)).toBe(200);
    const del = await s.call('DELETE', `/keys/${created.body.data.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ deleted: true, revoked: true });
    expect(await status(key)).toBe(401);
  });

  it('refuses a key without the route scope with 403', async () => {
    const created = await s.call('POST', '/keys', { body: { name: 'chat only', scopes: ['chat'] } });
    const r = await s.call('GET', '/keys', { key: created.body.data.key });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('FORBIDDEN');
    expect(r.body.error.message).toContain('admin');
  });

  it('lets any valid key read GET / whatever its scopes', async () => {
    const created = await s.call('POST', '/keys', { body: { name: 'usage only', scopes: ['usage'] } });
    const r = await s.call('GET', '/', { key: created.body.data.key });
    expect(r.status).toBe(200);
    expect(r.body.data.scopes).toEqual(['usage']);
  });

  it('refuses admin routes to a member even with the admin scope', async () => {
    const member = await s.call('POST', '/members', {
      body: { email: 'm1@example.com', name: 'Member One' },
    });
    expect(member.status).toBe(201);
    const mk = await s.call('POST', `/members/${member.body.data.id}/keys`, { body: { name: 'member key' } });
    expect(mk.status).toBe(201);
    const r = await s.call('GET', '/members', { key: mk.body.data.key });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('FORBIDDEN');
    expect((await s.call('GET', '/', { key: mk.body.data.key })).status).toBe(200);
  });

  it('updates lastUsedAt on use', async () => {
    const created = await s.call('POST', '/keys', { body: { name: 'tracked' } });
    expect(created.body.data.lastUsedAt).toBeNull();
    await s.call('GET', '/', { key: created.body.data.key });
    const list = await s.call('GET', '/keys?pageSize=100');
    const row = list.body.data.find((k: any) => k.id === created.body.data.id);
    expect(row.lastUsedAt).not.toBeNull();
  });

  it('treats a removed member’s keys as revoked', async () => {
    const member = await s.call('POST', '/members', { body: { email: 'gone@example.com', name: 'Gone' } });
    const mk = await s.call('POST', `/members/${member.body.data.id}/keys`, {
      body: { name: 'k', scopes: ['chat'] },
    });
    expect(await status(mk.body.data.key, '/')).toBe(200);
    expect((await s.call('DELETE', `/members/${member.body.data.id}`)).body.data).toEqual({ deleted: true });
    expect(await status(mk.body.data.key, '/')).toBe(401);
    expect((await s.call('GET', `/members/${member.body.data.id}`)).status).toBe(404);
  });

  it('keeps two organizations apart: the other’s keys and members are 404', async () => {
    const other = await createOrganization({ name: 'Other', adminEmail: 'boss@other.example' });
    const otherMember = await s.call('POST', '/members', {
      key: other.key,
      body: { email: 'x@other.example', name: 'X' },
    });
    expect(otherMember.status).toBe(201);
    expect((await s.call('GET', `/members/${otherMember.body.data.id}`)).status).toBe(404);
    expect(
      (await s.call('PATCH', `/members/${otherMember.body.data.id}`, { body: { name: 'hijack' } })).status,
    ).toBe(404);
    expect((await s.call('DELETE', `/members/${otherMember.body.data.id}`)).status).toBe(404);
    expect(
      (await s.call('POST', `/members/${otherMember.body.data.id}/keys`, { body: { name: 'x' } })).status,
    ).toBe(404);
    expect((await s.call('DELETE', `/keys/${other.keyId}`)).status).toBe(404);
    const mine = await s.call('GET', '/keys?pageSize=100');
    expect(mine.body.data.map((k: any) => k.id)).not.toContain(other.keyId);
    const theirs = await s.call('GET', '/members?pageSize=100', { key: other.key });
    expect(theirs.body.data.map((m: any) => m.email).sort()).toEqual([
      'boss@other.example',
      'x@other.example',
    ]);
    expect((await s.call('GET', '/keys', { key: other.key })).body.data).toHaveLength(1);
  });
  it('applies a member’s role change to every key it holds before answering, both ways', async () => {
    const member = await s.call('POST', '/members', { body: { email: 'promo@example.com', name: 'Promo' } });
    const id = member.body.data.id;
    const keys = await Promise.all(
      ['a', 'b'].map(
        async (name) => (await s.call('POST', `/members/${id}/keys`, { body: { name } })).body.data.key,
      ),
    );
    for (const k of keys) expect(await status(k, '/members')).toBe(403);
    expect((await s.call('PATCH', `/members/${id}`, { body: { role: 'admin' } })).status).toBe(200);
    for (const k of keys) expect(await status(k, '/members')).toBe(200);
    expect((await s.call('PATCH', `/members/${id}`, { body: { role: 'member' } })).status).toBe(200);
    for (const k of keys) expect(await status(k, '/members')).toBe(403);
  });

  it('reads the user item for a key lookup record without the user’s copy (older data)', async () => {
    const member = await s.call('POST', '/members', {
      body: { email: 'legacy@example.com', name: 'Legacy' },
    });
    const id = member.body.data.id;
    const { record, key } = await authStore.createKey(s.app.orgId, id, { name: 'old', scopes: ['*'] });
    expect((await authStore.findKeyByHash(record.keyHash))?.userAuth).toEqual({
      role: 'member',
      connectionIds: [],
      deleted: false,
    });
    await db.patch(`KEYHASH#${record.keyHash}`, 'KEY', { userAuth: undefined, userVersion: undefined });
    expect(await status(key, '/members')).toBe(403);
    // A change written to the user item alone (as older code did) is what this key gets, once this
    // instance's copy of the key is older than LOUPE_KEY_CACHE_MS (forgetCachedKeys: the bound has passed).
    await db.patch(`ORG#${s.app.orgId}`, `USER#${id}`, { role: 'admin' });
    authStore.forgetCachedKeys();
    expect(await status(key, '/members')).toBe(200);
    await db.patch(`ORG#${s.app.orgId}`, `USER#${id}`, { deletedAt: new Date().toISOString() });
    authStore.forgetCachedKeys();
    expect(await status(key, '/')).toBe(401);
  });

  it('never lets an older copy of the user overwrite a newer one on a key', async () => {
    const member = await s.call('POST', '/members', { body: { email: 'race@example.com', name: 'Race' } });
    const id = member.body.data.id;
    const { record, key } = await authStore.createKey(s.app.orgId, id, { name: 'k', scopes: ['*'] });
    const v = (await authStore.findKeyByHash(record.keyHash))!.userVersion!;
    // A newer change already reached the key (its user item write is not shown here)…
    await db.patch(`KEYHASH#${record.keyHash}`, 'KEY', {
      userAuth: { role: 'admin', connectionIds: [], deleted: false },
      userVersion: v + 5,
    });
    // …so a late copy of the older user item leaves it alone.
    await authStore.syncUserKeys(s.app.orgId, id);
    expect((await authStore.findKeyByHash(record.keyHash))?.userVersion).toBe(v + 5);
    expect(await status(key, '/members')).toBe(200);
    // A real change numbers past it: every change adds one to the user item's version.
    await db.patch(`ORG#${s.app.orgId}`, `USER#${id}`, { authVersion: v + 5 });
    expect((await s.call('PATCH', `/members/${id}`, { body: { role: 'member' } })).status).toBe(200);
    expect((await authStore.findKeyByHash(record.keyHash))?.userVersion).toBe(v + 6);
    expect(await status(key, '/members')).toBe(403);
  });

  it('refuses a key issued to a user that is being (or was) removed', async () => {
    const member = await s.call('POST', '/members', { body: { email: 'late@example.com', name: 'Late' } });
    const user = (await authStore.getUser(s.app.orgId, member.body.data.id))!;
    expect(await authStore.deleteUser(s.app.orgId, user)).toBe(true);
    const { key, record } = await authStore.createKey(s.app.orgId, user.id, { name: 'late', scopes: ['*'] });
    expect((await authStore.findKeyByHash(record.keyHash))?.userAuth?.deleted).toBe(true);
    expect(await status(key, '/')).toBe(401);
  });
});
