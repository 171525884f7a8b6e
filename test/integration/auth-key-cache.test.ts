import { afterAll, afterEach, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { liveKey } from '../../shared/auth/authenticate';
import { hashKey } from '../../shared/auth/key-material';
import { authStore } from '../../shared/auth/store';
import { config } from '../../shared/platform/config';
import { documentClient } from '../../shared/platform/db/client';
import { db } from '../../shared/platform/db/store';
import { startTestServer, type TestServer } from '../support/server';

/**
 * This instance's copies of key lookup records (shared/auth/store.ts, docs/internals/read-path.md): at
 * most one read per key per LOUPE_KEY_CACHE_MS, every use still checked (expiry against the clock,
 * revocation, the user), changes made here effective at once, others within the bound.
 */
describe('key lookups kept per instance', () => {
  let s: TestServer;
  let send: MockInstance;
  const url = 'http://localhost/v1/.well-known/oauth-protected-resource';
  const bearer = (key: string) => `Bearer ${key}`;
  /** GetItem calls of one key's lookup record since `from`. */
  const keyReads = (hash: string, from: number) =>
    send.mock.calls
      .slice(from)
      .filter(
        ([op, input]) => op === 'GetItem' && (input as { Key: { pk: string } }).Key.pk === `KEYHASH#${hash}`,
      ).length;

  type Send = (operation: string, input: Record<string, unknown>) => Promise<Record<string, any>>;
  /** Runs instead of the store call when set (it gets the real call). */
  let hook:
    | ((operation: string, input: Record<string, unknown>, call: Send) => Promise<Record<string, any>>)
    | undefined;

  beforeAll(async () => {
    s = await startTestServer();
    const client = documentClient();
    const original = client.send.bind(client) as Send;
    send = vi
      .spyOn(client, 'send')
      .mockImplementation(((op: string, input: Record<string, unknown>) =>
        hook ? hook(op, input, original) : original(op, input)) as never);
  });
  afterEach(() => {
    hook = undefined;
  });
  afterAll(async () => {
    send?.mockRestore();
    await s?.stop();
  });

  const newKey = async (body: Record<string, unknown> = {}) => {
    const r = await s.call('POST', '/keys', { body: { name: 'cached', ...body } });
    expect(r.status, r.text).toBe(201);
    return { key: r.body.data.key as string, id: r.body.data.id as string };
  };

  it('reads a key once per bound, however many requests use it', async () => {
    const { key } = await newKey();
    const from = send.mock.calls.length;
    const started = Date.now();
    for (let i = 0; i < 15; i++) expect((await s.call('GET', '/', { key })).status).toBe(200);
    const reads = keyReads(hashKey(key), from);
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / config().LOUPE_KEY_CACHE_MS));
  });

  it('checks expiry against the clock on every use, also on a kept copy', async () => {
    const expiresAt = Date.now() + 2000;
    const { key } = await newKey({ expiresAt: new Date(expiresAt).toISOString() });
    await liveKey(bearer(key), url); // read now and kept
    const from = send.mock.calls.length;
    // A moment after expiry, well inside the bound of the copy: refused without reading the store.
    await expect(liveKey(bearer(key), url, new Date(expiresAt + 1))).rejects.toMatchObject({
      status: 401,
      message: 'API key has expired.',
    });
    expect(keyReads(hashKey(key), from)).toBe(0);
  });

  it('revocation and member changes made here take effect at once, also on kept copies', async () => {
    const { key, id } = await newKey();
    await liveKey(bearer(key), url);
    expect((await s.call('DELETE', `/keys/${id}`)).status).toBe(200);
    await expect(liveKey(bearer(key), url)).rejects.toMatchObject({ status: 401 });

    const member = await s.call('POST', '/members', { body: { email: 'kept@example.com', name: 'Kept' } });
    const memberKey = (await s.call('POST', `/members/${member.body.data.id}/keys`, { body: { name: 'm' } }))
      .body.data.key as string;
    expect((await s.call('GET', '/members', { key: memberKey })).status).toBe(403);
    expect(
      (await s.call('PATCH', `/members/${member.body.data.id}`, { body: { role: 'admin' } })).status,
    ).toBe(200);
    expect((await s.call('GET', '/members', { key: memberKey })).status).toBe(200);
    expect((await s.call('DELETE', `/members/${member.body.data.id}`)).status).toBe(200);
    expect((await s.call('GET', '/', { key: memberKey })).status).toBe(401);
  });

  it("sees another writer's revocation once its copy is older than the bound", async () => {
    const { key } = await newKey();
    const hash = hashKey(key);
    const read = await liveKey(bearer(key), url);
    // Another instance revokes it: this one's store writes are not involved.
    await db.patch(`KEYHASH#${hash}`, 'KEY', { revokedAt: new Date().toISOString() });
    const from = send.mock.calls.length;
    const later = new Date(Date.now() + config().LOUPE_KEY_CACHE_MS + 1);
    await expect(liveKey(bearer(key), url, later)).rejects.toMatchObject({ status: 401 });
    expect(keyReads(hash, from)).toBe(1);
    expect(read.revokedAt).toBeUndefined();
  });

  it('never keeps a lookup that was under way when this instance revoked the key', async () => {
    const { key, id } = await newKey();
    const hash = hashKey(key);
    authStore.forgetCachedKeys();
    // The lookup reads the record before the revocation, and its answer arrives after it.
    let arrived = () => {};
    const readDone = new Promise<void>((r) => {
      arrived = r;
    });
    let deliver = () => {};
    const delivered = new Promise<void>((r) => {
      deliver = r;
    });
    hook = async (op, input, call) => {
      const out = await call(op, input);
      if (op === 'GetItem' && (input as { Key: { pk: string } }).Key.pk === `KEYHASH#${hash}`) {
        arrived();
        await delivered;
      }
      return out;
    };
    const inFlight = liveKey(bearer(key), url);
    await readDone;
    hook = undefined;
    expect((await s.call('DELETE', `/keys/${id}`)).status).toBe(200);
    deliver();
    // The request that started before the revocation goes on with what it read…
    expect((await inFlight).id).toBe(id);
    // …but the copy was not kept: the next use reads the revoked record.
    await expect(liveKey(bearer(key), url)).rejects.toMatchObject({ status: 401 });
    expect((await s.call('GET', '/', { key })).status).toBe(401);
  });
});
